"""Number formats of the dashboard: one place decides how a fraction or a κ is shown."""

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, SupportsFloat, SupportsInt

from django import template

from corpus.agreement import ratio
from corpus.selectors import genre_names

if TYPE_CHECKING:
    from dashboard.queries.costs import Money
    from dashboard.views.common import Scope

register = template.Library()

MISSING = "—"


@register.filter
def pct(value: SupportsFloat | str | None, digits: int | str = 1) -> str:
    """0.8871 -> '88.7%'; None (undefined: nothing to count yet) -> '—'."""
    if value is None or value == "":
        return MISSING
    return f"{100 * float(value):.{int(digits)}f}%"


@register.filter
def decimal(value: SupportsFloat | str | None, digits: int | str = 3) -> str:
    if value is None or value == "":
        return MISSING
    return f"{float(value):.{int(digits)}f}"


@register.filter
def minutes(seconds: float | None) -> float | None:
    return None if seconds is None else seconds / 60


@register.filter
def raw(value: object) -> str:
    """The exact figure for data-value attributes (tests and scripts read these)."""
    if value is None:
        return ""
    return repr(value) if isinstance(value, float) else str(value)


@register.filter
def thousands(value: SupportsInt | str | None) -> str:
    if value is None or value == "":
        return MISSING
    return f"{int(value):,}"


@register.filter
def get(mapping: Mapping[Any, Any] | None, key: Any) -> Any:
    return mapping.get(key) if mapping else None


register.filter("share", ratio)


@register.filter
def as_json(value: object) -> str:
    return json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False)


@register.simple_tag
def scoped_url(base: str, scope: "Scope | None", **params: object) -> str:
    """A URL of this page with the current dataset/split and extra GET parameters."""
    parts = [scope.query()] if scope is not None and scope.query() else []
    parts += [f"{key}={value}" for key, value in params.items() if value not in (None, "")]
    return base + ("?" + "&".join(parts) if parts else "")


@register.filter
def genre_name(slug: str | None) -> str | None:
    """'facetoface' -> 'Face-to-face': pages show a genre's name, never its slug."""
    return genre_names().get(slug, slug) if slug else slug


@register.filter
def money(value: "Money | None") -> str:
    """A cost (dashboard.queries.costs.Money) as '12.50 GBP'; None (nothing to divide by) -> '—'."""
    return MISSING if value is None else str(value)


@register.filter
def money_raw(value: "Money | None") -> str:
    """A cost for data-value: the number (one currency), the text (several), '' when undefined."""
    return "" if value is None else value.value
