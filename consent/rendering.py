"""The information sheet's Markdown as HTML a participant's page can show. A team's researcher is
not trusted to put script on participants' pages: raw HTML is escaped (markdown-it's `html` option
off), and markdown-it refuses javascript:, vbscript:, file: and data: links: no sanitiser needed."""

from functools import cache

from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt


@cache
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})


def sheet_html(text: str) -> SafeString:
    """The sheet's Markdown as HTML, raw HTML escaped."""
    html: str = _parser().render(text)
    return mark_safe(html)
