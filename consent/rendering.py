"""The information sheet's Markdown as HTML a participant's page can show.

The lab writes the sheet, but a team's researcher is not trusted to put script on participants'
pages: raw HTML in the Markdown is escaped (markdown-it's `html` option off), and markdown-it
refuses links to javascript:, vbscript:, file: and data: URLs, so the output needs no sanitiser.
"""

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
