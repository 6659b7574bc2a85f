"""The pair browser's label lists, written in one step per pair: as template nodes a page's 250
labels were most of its rendering."""

from collections.abc import Sequence

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from dashboard.queries.pair_page import LabelShown

register = template.Library()


IMPORTED = mark_safe(' <span class="muted">(imported)</span>')
EXCLUDED = mark_safe(' <span class="flag bad">excluded</span>')


def _who(label: LabelShown) -> SafeString:
    if not label["worker"]:
        return IMPORTED
    return format_html(' <span class="muted">{}</span>{}', label["worker"], EXCLUDED if label["excluded"] else "")


@register.filter
def label_items(labels: Sequence[LabelShown]) -> SafeString:
    """The `<li>` of each label: its chip, author or validator, and who gave it (excluded, imported)."""
    return format_html_join(
        "\n",
        '<li data-position="{}"><span class="label-chip label-{}">{}</span>\n            {}{}</li>',
        ((label["position"], label["label"], label["label"], label["role"], _who(label)) for label in labels),
    )
