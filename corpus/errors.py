"""Refusals of the corpus's writes, in a module of their own: `corpus.services` and
`corpus.adjudication` both raise them, and the services call the adjudication (a model's vote
withdrawn after an exclusion) without a module circle."""

from django.core.exceptions import ValidationError


class LabelRefused(ValidationError):
    """A label that cannot be added; the message is fit to show whoever gave it."""
