"""What the admin attacks share: a browser that logs in to /admin/ and posts its forms back.

Standard library only, as a browser: the login form with its CSRF token, then pages read and forms
posted with the cookie's token. `form_fields` reads a change form as a browser submits it (inputs,
checked boxes, text areas, selected options), so an attack posts what the page offered, changed.
"""

import http.cookiejar
import urllib.error
import urllib.parse
import urllib.request
from html.parser import HTMLParser


class AdminBrowser:
    def __init__(self, base_url: str):
        self.base_url = base_url.rstrip("/")
        self.cookies = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.cookies))

    def _token(self) -> str:
        return next((cookie.value or "" for cookie in self.cookies if cookie.name == "csrftoken"), "")

    def get(self, path: str) -> tuple[int, str]:
        return self._open(urllib.request.Request(self.base_url + path))

    def post(self, path: str, fields: dict | list) -> tuple[int, str]:
        pairs = list(fields.items()) if isinstance(fields, dict) else list(fields)
        pairs = [(name, value) for name, value in pairs if name != "csrfmiddlewaretoken"]
        pairs.append(("csrfmiddlewaretoken", self._token()))
        body = urllib.parse.urlencode(pairs, doseq=True).encode()
        request = urllib.request.Request(
            self.base_url + path, data=body, headers={"Referer": self.base_url + path}, method="POST"
        )
        return self._open(request)

    def _open(self, request: urllib.request.Request) -> tuple[int, str]:
        try:
            with self.opener.open(request, timeout=30) as answer:
                return answer.status, answer.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as refused:
            return refused.code, refused.read().decode("utf-8", "replace")

    def login(self, username: str, password: str) -> bool:
        self.get("/admin/login/")
        status, page = self.post(
            "/admin/login/?next=/admin/", {"username": username, "password": password, "next": "/admin/"}
        )
        return status == 200 and 'id="login-form"' not in page


class _FormReader(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.fields: list[tuple[str, str]] = []
        self._textarea: str | None = None
        self._text: list[str] = []
        self._select: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = {key: value or "" for key, value in attrs}
        name = named.get("name", "")
        if tag == "input" and name:
            kind = named.get("type", "text")
            if kind in ("submit", "button", "file", "image"):
                return
            if kind in ("checkbox", "radio") and "checked" not in named:
                return
            self.fields.append((name, named.get("value", "on" if kind == "checkbox" else "")))
        elif tag == "textarea" and name:
            self._textarea, self._text = name, []
        elif tag == "select" and name:
            self._select = name
        elif tag == "option" and self._select and "selected" in named:
            self.fields.append((self._select, named.get("value", "")))

    def handle_data(self, data: str) -> None:
        if self._textarea is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "textarea" and self._textarea is not None:
            self.fields.append((self._textarea, "".join(self._text).lstrip("\n")))
            self._textarea = None
        elif tag == "select":
            self._select = None


def form_fields(page: str) -> dict[str, str]:
    """The fields a browser would submit from the page's forms (the last value of a repeated name)."""
    reader = _FormReader()
    reader.feed(page)
    return dict(reader.fields)
