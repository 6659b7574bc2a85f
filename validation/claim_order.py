"""A study's preference in the validation claim's order, registered at start (docs/architecture.md).

The candidate statement (`validation.selectors.candidate_statement`) orders pairs closest to
complete first. An app above validation may put some pairs of a study first (the model annotators'
triage: pairs whose model label differs from the writer's). Validation must not name that app, so
it declares what it calls (`ClaimPreference`: given the study, an SQL boolean expression over
`collection_pair` and its params, or None), and the composition root registers it. The candidate
statement takes the pairs the expression holds for first, then the others (one statement of two
parts, each walking the claim index); a study without a preference gets the plain statement.

A claim in a process that never registered the preference fails loudly rather than silently
leaving a study's triage out.
"""

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ImproperlyConfigured

if TYPE_CHECKING:
    from crowd.models import Study

Preference = tuple[str, list[Any]]
ClaimPreference = Callable[["Study"], Preference | None]

_registered: list[ClaimPreference] = []


def register(preference: ClaimPreference) -> None:
    """Register the preference (the composition root, at start); a second call replaces the first."""
    _registered[:] = [preference]


def preference_for(study: "Study") -> Preference | None:
    if not _registered:
        raise ImproperlyConfigured(
            "No claim preference is registered: annotation_site.apps.SiteConfig must be in INSTALLED_APPS."
        )
    return _registered[0](study)
