"""The pair browser's label lists, written in one step per pair: as template nodes a page's 250
labels were most of its rendering, and so were `format_html` calls, each argument through Django's
lazy `conditional_escape`. Each text is escaped here by `html.escape`, the function Django's
`escape` calls, and the list joined as plain strings."""

from collections.abc import Sequence
from html import escape

from django import template
from django.utils.safestring import SafeString, mark_safe

from dashboard.queries.pair_page import LabelShown

register = template.Library()


IMPORTED = ' <span class="muted">(imported)</span>'
EXCLUDED = ' <span class="flag bad">excluded</span>'


def _who(label: LabelShown) -> str:
    if not label["worker"]:
        return IMPORTED
    return f' <span class="muted">{escape(label["worker"])}</span>{EXCLUDED if label["excluded"] else ""}'


def _item(label: LabelShown) -> str:
    chosen = escape(label["label"])
    return (
        f'<li data-position="{int(label["position"])}"><span class="label-chip label-{chosen}">{chosen}</span>\n'
        f"            {escape(label['role'])}{_who(label)}</li>"
    )


@register.filter
def label_items(labels: Sequence[LabelShown]) -> SafeString:
    """The `<li>` of each label: its chip, author or validator, and who gave it (excluded, imported)."""
    # Safe: every text in an item went through `escape`; the rest is this module's own markup.
    return mark_safe("\n".join(_item(label) for label in labels))
