"""Study-link takeover, tried as an attacker would.

A participant (the victim) opens a writing study's link in their browser, writes the task and
sees their completion code. Another browser (the attacker) then opens the same link with the
victim's PROLIFIC_PID and SESSION_ID, presses whatever button it is shown (an interstitial's
"continue" included), and asks for the next task, where a finished session shows its code.
The attack succeeds when the victim's code appears on any page the attacker's browser gets.
The victim's own flow is checked too: their arrival and return must need no click.

Setup: a writing study (slug `takeover-<seed>`, one task per session) with a few premises, made
with `manage.py shell` in the environment of this process, which must point at the server's
database (DATABASE_URL).
"""

import http.client
import re
import secrets
import subprocess
import sys
from html import unescape
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import urlencode, urljoin, urlsplit

NAME = "study-link-takeover"
CLAIM = "Open a study link with another participant's id and session id and read that session's completion code."
REPO = Path(__file__).resolve().parents[2]
CODE_PREFIX = "TAKEOVER"
HYPOTHESES = {
    "entailment": "A boat departed early in the morning.",
    "neutral": "The boat carried tourists to an island.",
    "contradiction": "The boat never left the harbour.",
}


class Browser:
    """Cookies and redirects over http.client (enough for Django's forms and CSRF)."""

    def __init__(self, base_url):
        parts = urlsplit(base_url)
        self.base, self.host, self.port = base_url.rstrip("/"), parts.hostname, parts.port or 80
        self.cookies = {}
        self.pages = []

    def request(self, method, path, fields=None):
        connection = http.client.HTTPConnection(self.host, self.port, timeout=60)
        headers = {}
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        body = None
        if fields is not None:
            body = urlencode(fields)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            headers["Referer"] = f"{self.base}{path}"
        try:
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            text = response.read().decode("utf-8", "replace")
            for value in response.headers.get_all("Set-Cookie") or []:
                for key, morsel in SimpleCookie(value).items():
                    self.cookies[key] = morsel.value
            return response.status, response.headers.get("Location"), text
        finally:
            connection.close()

    def go(self, method, path, fields=None):
        """Follow redirects; returns (final path, status, text) and keeps every page seen."""
        status, location, text = self.request(method, path, fields)
        self.pages.append(text)
        for _ in range(10):
            if status not in (301, 302, 303) or not location:
                break
            path = urlsplit(urljoin(f"{self.base}{path}", location))
            path = path.path + (f"?{path.query}" if path.query else "")
            status, location, text = self.request("GET", path)
            self.pages.append(text)
        return path, status, text


def _forms(text):
    """(action, fields) of each POST form on a page, hidden inputs and the submit button included."""
    for match in re.finditer(r'<form[^>]*method="post"[^>]*>(.*?)</form>', text, re.S | re.I):
        action = re.search(r'action="([^"]*)"', match.group(0))
        fields = {}
        for name, value in re.findall(r'<input[^>]*name="([^"]+)"[^>]*value="([^"]*)"', match.group(1)):
            fields[unescape(name)] = unescape(value)
        for name, value in re.findall(r'<button[^>]*name="([^"]+)"[^>]*value="([^"]*)"', match.group(1)):
            fields[unescape(name)] = unescape(value)
        yield (unescape(action.group(1)) if action else ""), fields


def setup_study(slug, premises=8):
    script = f"""
import uuid
from corpus.models import Dataset, Genre, Premise, PromptFamily
from crowd.models import Study
family, _ = PromptFamily.objects.get_or_create(slug="attack-fiction", defaults=dict(name="Attack fiction",
    instructions="Read the line. Write three sentences.", entailment_prompt="Definitely correct.",
    neutral_prompt="Might be correct.", contradiction_prompt="Definitely incorrect."))
genre, _ = Genre.objects.get_or_create(slug="attack-fiction", defaults=dict(name="Attack fiction", is_training=True,
    family=family))
dataset, _ = Dataset.objects.get_or_create(slug="attack-takeover", defaults=dict(name="Attack: study links"))
Study.objects.get_or_create(slug={slug!r}, defaults=dict(name="Takeover", dataset=dataset, tasks_per_batch=1,
    completion_code={CODE_PREFIX!r}))
for _ in range({premises}):
    Premise.objects.create(dataset=dataset, genre=genre, prompt_id=uuid.uuid4().hex[:12], split="train",
        text="The ferry left the harbour at dawn with " + uuid.uuid4().hex[:6] + " aboard.")
"""
    subprocess.run(
        [sys.executable, str(REPO / "manage.py"), "shell", "-c", script],
        check=True,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
    )


def victim_finishes(base_url, link):
    """The victim's browser: arrival, one writing task, the completion page. Returns (browser, code, clicks)."""
    victim = Browser(base_url)
    path, _, text = victim.go("GET", link)
    clicks = 0 if "/write/" in path else 1
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', text)
    fields = {"csrfmiddlewaretoken": token.group(1) if token else "", **HYPOTHESES}
    _, _, done = victim.go("POST", path, fields)
    code = re.search(r'id="completion-code">([^<]+)<', done)
    return victim, (code.group(1).strip() if code else ""), clicks


def attacker_tries(base_url, link, code):
    """A fresh browser with the victim's ids: open the link, press every button, ask for the task page."""
    attacker = Browser(base_url)
    path, _, text = attacker.go("GET", link)
    # Still on the study link's page: an interstitial asks first. Press its buttons as an attacker would.
    asked = path.startswith("/study/")
    for action, fields in list(_forms(text)) if asked else []:
        target = urlsplit(urljoin(f"{base_url.rstrip('/')}{path}", action or path))
        attacker.go("POST", target.path + (f"?{target.query}" if target.query else ""), fields)
    attacker.go("GET", "/write/next/")
    return any(code in page for page in attacker.pages), asked


def run(base_url, *, seed=0, tries=5):
    slug = f"takeover-{seed}"
    setup_study(slug, premises=tries + 2)
    revealed = asked = victim_clicks = 0
    for _ in range(tries):
        pid, session = secrets.token_hex(12), f"sess{secrets.token_hex(6)}"
        link = f"/study/{slug}/?" + urlencode({"PROLIFIC_PID": pid, "STUDY_ID": "atk", "SESSION_ID": session})
        victim, code, clicks = victim_finishes(base_url, link)
        if not code.startswith(CODE_PREFIX):
            raise RuntimeError("The victim got no completion code: the study setup did not work.")
        victim_clicks += clicks
        # The victim's browser coming back needs no click either.
        back, _, _ = victim.go("GET", link)
        victim_clicks += 0 if "/write/" in back or "/study/" not in back else 1
        got, was_asked = attacker_tries(base_url, link, code)
        revealed += got
        asked += was_asked
    return {
        "attack": NAME,
        "tries": tries,
        "succeeded": revealed,
        "measure": "share of takeovers that read the victim's completion code",
        "value": revealed / tries,
        "interval": None,
        "at_chance_or_refused": revealed == 0,
        "detail": f"attacker asked first in {asked} of {tries}; code revealed in {revealed}; "
        f"clicks the victim needed: {victim_clicks}",
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8840"), indent=1))
