"""Login lockout and token guessing, tried as an attacker would.

Four phases, each from its own loopback address (127.0.0.x: Linux routes the whole 127/8 to the
machine, so the server sees distinct REMOTE_ADDRs without trusting any header):

1. look-alikes: wrong passwords for one account under its plain, fullwidth and
   mathematical-bold spellings (Django's login form normalises them all with NFKC to the same
   user, so every one is a real password check);
2. parallel: 19 wrong passwords for one account at once (threads released together);
3. owner: five failures from an attacker's address, then the owner logs in from their own
   address with the right password (a lockout must not keep them out);
4. tokens: 80 random DRF tokens and 80 random node tokens against the API.

Setup: the three accounts are created (or their passwords reset) with `manage.py shell`, run in
the environment of this process, which must point at the server's database (DATABASE_URL).

What counts as the attack succeeding (`succeeded`): each password check past the limit of
LIMIT failures per account (phases 1 and 2), the owner refused with the right password (phase 3),
and each bad token answered 401 (checked) after TOKEN_LIMIT bad tokens from one address (phase 4).
"""

import http.client
import re
import secrets
import subprocess
import sys
import threading
import unicodedata
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import urlencode, urlsplit

NAME = "lookalike-login"
CLAIM = (
    "Check more passwords than the lockout allows (look-alike usernames, parallel tries), lock the owner out, "
    "and guess API tokens without being throttled."
)
LIMIT = 5  # failures per account (LOGIN_FAILURES_PER_USERNAME, shipped default)
TOKEN_LIMIT = 20  # bad tokens per address (API_FAILED_TOKENS_PER_ADDRESS, shipped default)
PASSWORD = "owner-pass-9f3k2"
REPO = Path(__file__).resolve().parents[2]


def fullwidth(text):
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


def math_bold(text):
    out = []
    for c in text:
        if "a" <= c <= "z":
            out.append(chr(0x1D41A + ord(c) - ord("a")))
        elif "A" <= c <= "Z":
            out.append(chr(0x1D400 + ord(c) - ord("A")))
        elif "0" <= c <= "9":
            out.append(chr(0x1D7CE + ord(c) - ord("0")))
        else:
            out.append(c)
    return "".join(out)


class Browser:
    """Cookies, CSRF and a fixed source address over http.client; no redirects followed."""

    def __init__(self, base_url, source="127.0.0.1"):
        parts = urlsplit(base_url)
        self.host, self.port, self.source = parts.hostname, parts.port or 80, source
        self.cookies = {}

    def request(self, method, path, fields=None, headers=None):
        connection = http.client.HTTPConnection(self.host, self.port, timeout=60, source_address=(self.source, 0))
        headers = dict(headers or {})
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        body = None
        if fields is not None:
            body = urlencode(fields)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            headers["Referer"] = f"http://{self.host}:{self.port}{path}"
        try:
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            text = response.read().decode("utf-8", "replace")
            for value in response.headers.get_all("Set-Cookie") or []:
                for key, morsel in SimpleCookie(value).items():
                    self.cookies[key] = morsel.value
            return response.status, response.headers, text
        finally:
            connection.close()

    def csrf(self, path):
        _, _, text = self.request("GET", path)
        found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', text)
        return found.group(1) if found else ""

    def login(self, username, password, path="/accounts/login/", token=None):
        token = token or self.csrf(path)
        status, _, _ = self.request(
            "POST", path, {"csrfmiddlewaretoken": token, "username": username, "password": password}
        )
        return status


def setup_accounts(usernames):
    """Create the accounts (or reset their passwords) in the server's database."""
    script = (
        "from django.contrib.auth import get_user_model\n"
        "U = get_user_model()\n"
        f"for name in {usernames!r}:\n"
        "    user, _ = U.objects.get_or_create(username=name)\n"
        f"    user.set_password({PASSWORD!r}); user.save()\n"
    )
    subprocess.run(
        [sys.executable, str(REPO / "manage.py"), "shell", "-c", script],
        check=True,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
    )


def lookalike_phase(base_url, username, source):
    browser = Browser(base_url, source)
    codes = []
    for spelling in (username, fullwidth(username), math_bold(username)):
        assert unicodedata.normalize("NFKC", spelling) == username
        for _ in range(LIMIT + 1):
            codes.append(browser.login(spelling, "wrong-password"))
    checked = codes.count(200)
    return len(codes), max(0, checked - LIMIT), f"look-alikes: {checked} of {len(codes)} checked"


def parallel_phase(base_url, username, source, tries=19):
    browsers = [Browser(base_url, source) for _ in range(tries)]
    tokens = [b.csrf("/accounts/login/") for b in browsers]
    barrier = threading.Barrier(tries)
    codes = [0] * tries

    def attempt(index):
        barrier.wait()
        codes[index] = browsers[index].login(username, "wrong-password", token=tokens[index])

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(tries)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    checked = codes.count(200)
    return tries, max(0, checked - LIMIT), f"parallel: {checked} of {tries} checked"


def owner_phase(base_url, username, attacker, owner):
    bad = Browser(base_url, attacker)
    for _ in range(LIMIT):
        bad.login(username, "wrong-password")
    status = Browser(base_url, owner).login(username, PASSWORD)
    return LIMIT + 1, int(status != 302), f"owner after {LIMIT} failures elsewhere: {status}"


def token_phase(base_url, source, scheme, path, tries=80):
    browser = Browser(base_url, source)
    codes = []
    for _ in range(tries):
        status, _, _ = browser.request("GET", path, headers={"Authorization": f"{scheme} {secrets.token_hex(20)}"})
        codes.append(status)
    checked_late = sum(1 for code in codes[TOKEN_LIMIT:] if code == 401)
    return tries, checked_late, f"{scheme} tokens: {codes.count(401)}x401 {codes.count(429)}x429"


def run(base_url, *, seed=0):
    tag = f"{seed}{secrets.token_hex(3)}"
    names = [f"lookalike{tag}", f"parallel{tag}", f"owner{tag}"]
    setup_accounts(names)
    phases = [
        lookalike_phase(base_url, names[0], "127.0.0.2"),
        parallel_phase(base_url, names[1], "127.0.0.3"),
        owner_phase(base_url, names[2], "127.0.0.4", "127.0.0.5"),
        token_phase(base_url, "127.0.0.6", "Token", "/api/stats/"),
        token_phase(base_url, "127.0.0.7", "Worker", "/api/worker/runs/1/"),
    ]
    tries = sum(p[0] for p in phases)
    succeeded = sum(p[1] for p in phases)
    return {
        "attack": NAME,
        "tries": tries,
        "succeeded": succeeded,
        "measure": "credential checks past the limit (+ owner refused)",
        "value": float(succeeded),
        "interval": None,
        "at_chance_or_refused": succeeded == 0,
        "detail": "; ".join(p[2] for p in phases),
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8840"), indent=1))
