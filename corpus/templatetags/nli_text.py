"""`{{ text|reader_text }}`: premise and hypothesis text as workers read it (corpus/detokenize.py)."""

from django import template

from corpus.detokenize import detokenize

register = template.Library()


@register.filter
def reader_text(value: object) -> str:
    return detokenize(str(value)) if value is not None else ""
