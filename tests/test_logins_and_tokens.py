"""Login lockout and failed API tokens as an attacker tries them:
look-alike spellings of one username share one count, parallel tries check at most the limit,
the owner still logs in from their own address, pauses grow, a researcher can unlock an account,
and bad tokens get 429 from an address after a limit (base/login_throttle.py)."""

import http.client
import re
import threading
from urllib.parse import urlencode, urlsplit

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.test import override_settings
from rest_framework.authtoken.models import Token

from modeling.models import NodeToken
from tests.present import present

LOGIN = "/accounts/login/"
RIGHT = "research-pass-1"
ATTACKER = "203.0.113.9"
OWNER = "198.51.100.4"


def fullwidth(text):
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


def math_bold(text):
    return "".join(chr(0x1D41A + ord(c) - ord("a")) if "a" <= c <= "z" else c for c in text)


def login(client, username, password="wrong-password", address=ATTACKER, path=LOGIN):
    return client.post(path, {"username": username, "password": password}, REMOTE_ADDR=address)


@pytest.mark.parametrize("spelling", [fullwidth, math_bold, str.upper], ids=["fullwidth", "math-bold", "upper"])
@pytest.mark.parametrize("path", [LOGIN, "/admin/login/"])
def test_look_alike_usernames_count_against_the_same_lockout(client, researcher, spelling, path):
    for _ in range(5):
        assert login(client, "researcher", path=path).status_code == 200
    # Django's login form reads "ｒｅｓｅａｒｃｈｅｒ" and "𝐫𝐞𝐬𝐞𝐚𝐫𝐜𝐡𝐞𝐫" as "researcher" (NFKC):
    # the same account, so the same count.
    assert login(client, spelling("researcher"), path=path).status_code == 429
    assert login(client, spelling("researcher"), RIGHT, path=path).status_code == 429
    assert "_auth_user_id" not in client.session


def test_failures_spread_over_spellings_are_one_count(client, researcher):
    for spelling in ["researcher", fullwidth("researcher"), math_bold("researcher"), "Researcher", "researcher"]:
        assert login(client, spelling).status_code == 200
    assert login(client, "researcher", RIGHT).status_code == 429


def test_the_owner_logs_in_from_their_address_after_an_attackers_failures(client, researcher):
    for _ in range(5):
        login(client, "researcher")
    assert login(client, "researcher", RIGHT).status_code == 429  # the attacker's address is paused
    assert login(client, "researcher", RIGHT, address=OWNER).status_code == 302


def test_pauses_double_with_each_further_failure(client, researcher):
    for _ in range(5):
        login(client, "researcher")
    first = login(client, "researcher")
    assert first.status_code == 429 and first["Retry-After"] == "60"
    for expected in ("120", "240", "480"):
        cache.delete_many(_pause_keys())  # the pause has passed
        assert login(client, "researcher").status_code == 200  # one more try after each pause
        paused = login(client, "researcher")
        assert paused.status_code == 429 and int(paused["Retry-After"]) in (int(expected), int(expected) - 1)


def _pause_keys():
    # The local-memory cache (SQLite runs) and Redis (PostgreSQL runs) name keys differently: ask both.
    store = getattr(cache, "_cache", None)
    if isinstance(store, dict):
        return [key.split(":", 2)[-1] for key in store if ":login:pause:" in key]
    client = present(store).get_client()
    return [key.decode().split(":", 2)[-1] for key in client.keys("*:login:pause:*")]


@override_settings(
    LOGIN_THROTTLE={
        "PATHS": (LOGIN,),
        "FAILURES_PER_USERNAME": 5,
        "FAILURES_PER_ADDRESS": 20,
        "FAILURES_PER_ACCOUNT": 3,
        "WINDOW_SECONDS": 900,
        "CLIENT_IP_HEADER": "REMOTE_ADDR",
    }
)
def test_many_addresses_pause_the_account_except_where_the_owner_logged_in_before(client, researcher):
    assert login(client, "researcher", RIGHT, address=OWNER).status_code == 302
    client.logout()
    for n in range(3):
        login(client, "researcher", address=f"203.0.113.{n + 1}")
    assert login(client, "researcher", RIGHT, address="203.0.113.77").status_code == 429
    assert login(client, "researcher", RIGHT, address=OWNER).status_code == 302


def test_a_researcher_unlocks_an_account(client, researcher):
    for _ in range(5):
        login(client, "researcher")
    assert login(client, "researcher", RIGHT).status_code == 429
    call_command("unlock_login", "researcher")
    assert login(client, "researcher", RIGHT).status_code == 302


def test_a_failed_csrf_check_tries_no_password_and_counts_nothing(researcher):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    for _ in range(8):
        assert login(client, "researcher").status_code == 403
    token = client.get(LOGIN).cookies["csrftoken"].value
    response = client.post(
        LOGIN, {"username": "researcher", "password": RIGHT, "csrfmiddlewaretoken": token}, REMOTE_ADDR=ATTACKER
    )
    assert response.status_code == 302


@pytest.mark.django_db(transaction=True)
def test_parallel_tries_check_at_most_the_limit(live_server, django_user_model, settings):
    # The production hasher: a check takes long enough for tries sent together to overlap.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]
    django_user_model.objects.create_user(username="target", password=RIGHT)
    parts = urlsplit(live_server.url)
    tries = 19
    barrier = threading.Barrier(tries)
    codes = [0] * tries

    def attempt(index):
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
        connection.request("GET", LOGIN)
        response = connection.getresponse()
        page = response.read().decode()
        cookie = response.headers["Set-Cookie"].split(";")[0]
        token = present(re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)).group(1)
        body = urlencode({"csrfmiddlewaretoken": token, "username": "target", "password": f"guess-{index}"})
        barrier.wait()
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
        headers = {"Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded"}
        connection.request("POST", LOGIN, body=body, headers=headers)
        codes[index] = connection.getresponse().status

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(tries)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(set(codes)) == [200, 429]
    assert codes.count(200) <= 5, f"{codes.count(200)} passwords checked against a limit of 5"


def test_bad_drf_tokens_get_429_after_the_limit_and_good_tokens_do_not(client, researcher):
    good = Token.objects.create(user=researcher).key
    for _ in range(30):  # good tokens never count
        assert client.get("/api/stats/", HTTP_AUTHORIZATION=f"Token {good}", REMOTE_ADDR=ATTACKER).status_code == 200
    codes = [
        client.get("/api/stats/", HTTP_AUTHORIZATION=f"Token {n:040x}", REMOTE_ADDR=ATTACKER).status_code
        for n in range(80)
    ]
    assert codes[:20] == [401] * 20 and codes[20:] == [429] * 60
    # The same good token from another address is unaffected.
    assert client.get("/api/stats/", HTTP_AUTHORIZATION=f"Token {good}", REMOTE_ADDR=OWNER).status_code == 200


def test_bad_node_tokens_get_429_after_the_limit(client, db):
    _, good = NodeToken.issue("node-a")
    codes = [
        client.get("/api/worker/runs/1/", HTTP_AUTHORIZATION=f"Worker bad-{n}", REMOTE_ADDR=ATTACKER).status_code
        for n in range(30)
    ]
    assert codes[:20] == [401] * 20 and codes[20:] == [429] * 10
    assert client.get("/api/worker/runs/1/", HTTP_AUTHORIZATION=f"Worker {good}", REMOTE_ADDR=OWNER).status_code == 404
