"""The sealed credentials (markets/sealing.py), at the edges mutmut found unguarded: the words that
tell a researcher which key to set (and a command in them that makes one), what a sealed token holds
when opened with the key alone, and what opening gives for nothing, a token that is no dict, or a
text sealed without its value."""

import json
import re
import subprocess
import sys

import pytest
from cryptography.fernet import Fernet

from markets.sealing import SealingUnavailable, seal, seal_text, unseal, unseal_text

NOT_SET = (
    "MARKET_CREDENTIALS_KEY is not set: the server cannot keep market credentials. Set it to a Fernet key "
    "(python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())')."
)
NOT_OPENED = (
    "The stored credentials cannot be opened with MARKET_CREDENTIALS_KEY (was the key changed?); enter them again."
)


@pytest.fixture
def key(settings) -> str:
    settings.MARKET_CREDENTIALS_KEY = Fernet.generate_key().decode()
    return settings.MARKET_CREDENTIALS_KEY


@pytest.mark.parametrize("setting", [None, "", " , ,"])
def test_no_key_at_all_says_it_is_not_set_and_how_to_make_one(settings, setting):
    settings.MARKET_CREDENTIALS_KEY = setting

    with pytest.raises(SealingUnavailable) as refused:
        seal({"token": "t"})

    assert str(refused.value) == NOT_SET


def test_the_command_the_not_set_message_gives_prints_a_key_that_seals(settings):
    settings.MARKET_CREDENTIALS_KEY = ""
    with pytest.raises(SealingUnavailable) as refused:
        unseal("a-token")
    command = re.search(r"\(python -c '(.+)'\)\.$", str(refused.value))
    assert command is not None

    made = subprocess.run([sys.executable, "-c", command.group(1)], capture_output=True, text=True, check=True)

    settings.MARKET_CREDENTIALS_KEY = made.stdout.strip()
    assert unseal(seal({"token": "t"})) == {"token": "t"}


def test_a_key_that_is_no_fernet_key_is_named_with_fernets_reason(settings):
    settings.MARKET_CREDENTIALS_KEY = "not-a-fernet-key"

    with pytest.raises(SealingUnavailable) as refused:
        seal({"token": "t"})

    message = str(refused.value)
    assert message.startswith("MARKET_CREDENTIALS_KEY is not a Fernet key (") and message.endswith(").")
    assert "32 url-safe base64-encoded bytes" in message


def test_a_token_sealed_under_another_key_says_to_enter_the_credentials_again(key, settings):
    token = seal({"token": "t"})
    settings.MARKET_CREDENTIALS_KEY = Fernet.generate_key().decode()

    with pytest.raises(SealingUnavailable) as refused:
        unseal(token)

    assert str(refused.value) == NOT_OPENED


def test_the_key_alone_opens_a_sealed_token_to_the_credentials_json_with_sorted_keys(key):
    token = seal({"secret_access_key": "s", "access_key_id": "a"})

    opened = Fernet(key.encode()).decrypt(token.encode())

    assert opened == b'{"access_key_id": "a", "secret_access_key": "s"}'
    assert json.loads(opened) == unseal(token)


def test_a_token_that_opens_to_no_dict_gives_no_credentials(key):
    listed = Fernet(key.encode()).encrypt(b'["token", "t"]').decode()
    text = Fernet(key.encode()).encrypt(b'"t"').decode()

    assert unseal(listed) == {} and unseal(text) == {}
    assert unseal_text(listed) == ""


def test_nothing_stored_opens_to_nothing(key):
    assert unseal("") == {}
    assert unseal_text("") == ""


def test_a_blank_text_is_stored_blank_and_a_text_round_trips(key):
    assert seal_text("") == ""
    assert unseal_text(seal_text("whsec")) == "whsec"
    assert unseal(seal_text("whsec")) == {"value": "whsec"}


def test_a_sealed_dict_without_a_value_opens_to_a_blank_text(key):
    assert unseal_text(seal({"token": "t"})) == ""
