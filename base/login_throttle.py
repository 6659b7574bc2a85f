"""How many passwords a client may try, and when (a guessed password is the cheapest way in).

Failed logins are counted in the shared cache, keyed on the account *as Django looks it up*: the
login form normalises a username with NFKC (``UsernameField``), so ``ｒｅｓｅａｒｃｈｅｒ``
(fullwidth) and ``𝐫𝐞𝐬𝐞𝐚𝐫𝐜𝐡𝐞𝐫`` (mathematical bold) check the password of ``researcher``;
the key is NFKC and then casefold, so every spelling of one account is one count.

Three counts, each a cache counter taken *before* the password is checked (an atomic ``incr``:
Redis ``INCR``, or the local-memory cache's lock), and given back when the login succeeds or the
password was never checked. A try whose number is past the limit is refused without checking,
so 19 parallel tries against a limit of 5 check 5 passwords, not 17.

- **Account from one address**: ``FAILURES_PER_USERNAME`` free failures, then a pause of
  ``FIRST_DELAY_SECONDS`` that doubles with every further failure (one try after each pause), up
  to ``MAX_DELAY_SECONDS``. It pauses that address only: five failures from an attacker's address
  never keep the owner out from theirs. A successful login from the address clears its count.
- **Address, any account**: ``FAILURES_PER_ADDRESS`` failures in ``WINDOW_SECONDS`` (one address
  spraying many accounts).
- **Account, any address**: ``FAILURES_PER_ACCOUNT`` failures in ``WINDOW_SECONDS`` (many
  addresses on one account) pause the account, except from addresses it logged in from before
  (in the last ``KNOWN_ADDRESS_DAYS``): the owner keeps their way in.

The owner's other way back: a researcher runs ``manage.py unlock_login USERNAME``, which starts the
account's counts afresh everywhere (its counts carry an epoch; the command moves it on).
"""

import contextlib
import hashlib
import math
import time
import unicodedata
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest

# Django's username field is 150 characters; NFKC may lengthen a name (one ligature, many letters).
MAX_USERNAME_CHARS = 150


def normalised_username(raw: str) -> str:
    """The account a login form's username names: NFKC (as Django's form does), then casefold (so
    ``Researcher`` and ``researcher`` share a count, whatever the database's collation)."""
    return unicodedata.normalize("NFKC", raw or "").strip().casefold()[:MAX_USERNAME_CHARS]


def client_address(request: HttpRequest) -> str:
    """The client's address: REMOTE_ADDR, or the last entry of the header a reverse proxy sets
    (LOGIN_CLIENT_IP_HEADER: the one the proxy added, which a client cannot forge)."""
    header = str(settings.LOGIN_THROTTLE["CLIENT_IP_HEADER"])
    address = request.META.get(header, "") or request.META.get("REMOTE_ADDR", "")
    return str(address).split(",")[-1].strip()[:64]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _limits() -> dict[str, Any]:
    limits = settings.LOGIN_THROTTLE
    return {
        "per_account_address": limits["FAILURES_PER_USERNAME"],
        "per_address": limits["FAILURES_PER_ADDRESS"],
        "per_account": limits.get("FAILURES_PER_ACCOUNT", 50),
        "window": limits["WINDOW_SECONDS"],
        "first_delay": limits.get("FIRST_DELAY_SECONDS", 60),
        "max_delay": limits.get("MAX_DELAY_SECONDS", 24 * 3600),
        "known_days": limits.get("KNOWN_ADDRESS_DAYS", 90),
    }


def take_count(key: str, timeout: int | None) -> int:
    """Add one to the counter `key` and return the new count, atomically; a new counter lives
    `timeout` seconds from its first count (incr never extends it; None: for ever)."""
    for _ in range(3):
        cache.add(key, 0, timeout=timeout)
        try:
            return cache.incr(key)
        except ValueError:  # expired between add and incr
            continue
    return 1


def _give_back(key: str) -> None:
    with contextlib.suppress(ValueError):  # expired meanwhile: nothing to give back
        cache.decr(key)


def account_epoch_key(username: str) -> str:
    return f"login:epoch:{_digest(normalised_username(username))}"


def unlock_account(username: str) -> None:
    """Start the account's counts and pauses afresh, from every address (``unlock_login``)."""
    take_count(account_epoch_key(username), timeout=None)


@dataclass
class LoginAttempt:
    """One POST to a login page, with the counts it took before its password is checked."""

    account: str
    address: str
    limits: dict[str, Any]
    taken: list[str]
    refused_for: int = 0  # seconds until a try may come again; 0: the password may be checked
    pair_count: int = 0
    pair_allowance: int = 0

    @property
    def _keys(self) -> dict[str, str]:
        pair = f"{self.account}:{_digest(self.address)}"
        return {
            "pair": f"login:pair:{pair}",
            "strikes": f"login:strikes:{pair}",
            "pause": f"login:pause:{pair}",
            "known": f"login:known:{pair}",
            "address": f"login:addr:{_digest(self.address)}",
            "account": f"login:acct:{self.account}",
        }

    def refuse(self, seconds: int) -> "LoginAttempt":
        self.not_checked()  # a refused try checks no password
        self.refused_for = max(1, math.ceil(seconds))
        return self

    def succeeded(self) -> None:
        keys = self._keys
        cache.delete_many([keys["pair"], keys["strikes"], keys["pause"]])
        for key in self.taken:
            if key != keys["pair"]:
                _give_back(key)
        cache.set(keys["known"], 1, timeout=self.limits["known_days"] * 24 * 3600)

    def failed(self) -> None:
        """A password was checked and was wrong: the counts stay; the last free try starts a pause."""
        if self.pair_count < self.pair_allowance:
            return
        keys = self._keys
        # The pause is set before the strike that raises the allowance is counted, and
        # begin_login reads them in the other order: a try that sees the raised allowance
        # also sees the pause. (Only the try that used the last free place gets here, so
        # the strike read now is the one counted next.)
        delay = self._delay(strikes=(cache.get(keys["strikes"]) or 0) + 1)
        cache.set(keys["pause"], time.time() + delay, timeout=delay)
        strikes = take_count(keys["strikes"], timeout=self.limits["max_delay"] * 2)
        if self._delay(strikes) != delay:
            cache.set(keys["pause"], time.time() + self._delay(strikes), timeout=self._delay(strikes))

    def _delay(self, strikes: int) -> int:
        return int(min(self.limits["first_delay"] * 2 ** (strikes - 1), self.limits["max_delay"]))

    def not_checked(self) -> None:
        """The request never reached a password check (a CSRF failure, an error): give the counts back."""
        for key in self.taken:
            _give_back(key)
        self.taken = []


def begin_login(request: HttpRequest) -> LoginAttempt:
    """Take this try's counts, or refuse it (``refused_for``) before its password is checked."""
    limits = _limits()
    username = normalised_username(request.POST.get("username") or "")
    epoch = cache.get(account_epoch_key(username), 0)
    attempt = LoginAttempt(f"{_digest(username)}.{epoch}", client_address(request), limits, taken=[])
    keys = attempt._keys

    paused_until = cache.get(keys["pause"])
    if paused_until is not None:
        return attempt.refuse(paused_until - time.time())

    attempt.taken.append(keys["address"])
    if take_count(keys["address"], limits["window"]) > limits["per_address"]:
        return attempt.refuse(limits["window"])

    attempt.taken.append(keys["account"])
    if take_count(keys["account"], limits["window"]) > limits["per_account"] and not cache.get(keys["known"]):
        return attempt.refuse(limits["window"])

    attempt.taken.append(keys["pair"])
    attempt.pair_count = take_count(keys["pair"], limits["max_delay"] * 2)
    attempt.pair_allowance = limits["per_account_address"] + (cache.get(keys["strikes"]) or 0)
    if attempt.pair_count > attempt.pair_allowance:
        # Tries sent together past the limit, or while the last free try is still being checked.
        return attempt.refuse(limits["first_delay"])
    # Read again after the strikes: a pause that began while this try took its counts holds it
    # (the allowance it just read may be the one that pause's strike raised).
    paused_until = cache.get(keys["pause"])
    if paused_until is not None:
        return attempt.refuse(paused_until - time.time())
    return attempt
