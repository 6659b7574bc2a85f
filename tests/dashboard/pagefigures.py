"""Reading the figures back out of a rendered page (their ids and data-value attributes)."""

from html.parser import HTMLParser


class FigureParser(HTMLParser):
    def __init__(self):
        super().__init__()
        self.by_id = {}  # id -> (data-value, text)
        self.rows = []  # (attrs of the enclosing <tr>, data-stat, data-value, text)
        self._open = []  # stack of [attrs, text parts] for elements with data-value
        self._row = {}

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "tr":
            self._row = attrs
        if "data-value" in attrs:
            self._open.append([attrs, []])

    def handle_data(self, data):
        for entry in self._open:
            entry[1].append(data)

    def handle_endtag(self, tag):
        if self._open and tag in ("td", "span", "strong", "a", "dd"):
            attrs, parts = self._open.pop()
            text = "".join(parts).strip()
            if "id" in attrs:
                self.by_id[attrs["id"]] = (attrs["data-value"], text)
            self.rows.append((self._row, attrs.get("data-stat"), attrs["data-value"], text))


def figures(html):
    parser = FigureParser()
    parser.feed(html)
    return parser


def number(value):
    """A data-value back to a number (None where the page said 'undefined')."""
    if value == "":
        return None
    return float(value)
