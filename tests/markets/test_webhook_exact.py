"""Prolific's webhook taken exactly: the signature byte for byte, the timestamp a real Unix time,
the body bounded before it is read."""

import json
import logging
import socket
import time

import pytest
from django.test import Client

from markets import events
from markets.models import WebhookDelivery

from .conftest import connect_prolific, make_study
from .test_events import SECRET, post_hook

pytestmark = pytest.mark.django_db

EVENT = {"event_type": "study.status.change", "resource_id": "study-1", "status": "ACTIVE"}


@pytest.fixture
def connection(standin):
    return connect_prolific(make_study(), standin)


@pytest.mark.parametrize("tail", ["\u00a0", "\u0085", " ", "\t"], ids=["nbsp", "nel", "space", "tab"])
def test_a_signature_with_anything_after_it_is_refused_and_no_second_delivery(connection, tail):
    timestamp = str(int(time.time()))
    signature = events.prolific_signature(SECRET, timestamp, json.dumps(EVENT).encode())
    assert post_hook(connection, EVENT, timestamp=timestamp, signature=signature).status_code == 200

    again = post_hook(connection, EVENT, timestamp=timestamp, signature=signature + tail)

    assert again.status_code == 403 and again.json()["detail"] == "Bad signature."
    assert WebhookDelivery.objects.count() == 1


@pytest.mark.parametrize(
    "timestamp",
    [
        str(10**20),  # a valid signature over it gave OverflowError, a 500
        "9" * 5000,  # past Python's own int() limit
        "1e20",
        "-5",
        "1700000000.5",
        "\u0661\u0667\u0660\u0660\u0660\u0660\u0660\u0660\u0660\u0660",  # Arabic-Indic digits: isdigit() says yes
        "0",  # 1970: no clock's skew
        "far future",
    ],
    ids=["1e20-digits", "5000-digits", "exponent", "negative", "fraction", "non-ascii-digits", "epoch", "in-2-days"],
)
def test_a_timestamp_out_of_range_is_a_400_in_words_and_stores_nothing(connection, timestamp):
    if timestamp == "far future":
        timestamp = str(int(time.time()) + 2 * 24 * 3600)
    signature = events.prolific_signature(SECRET, timestamp, json.dumps(EVENT).encode())

    answer = post_hook(connection, EVENT, timestamp=timestamp, signature=signature)

    assert answer.status_code == 400, answer.content
    assert "timestamp" in answer.json()["detail"]
    assert not WebhookDelivery.objects.exists()


def test_a_timestamp_an_hour_old_is_still_a_stale_replay_403(connection):
    timestamp = str(int(time.time()) - 3600)
    answer = post_hook(connection, EVENT, timestamp=timestamp)
    assert answer.status_code == 403 and "Stale" in answer.json()["detail"]


def test_an_oversized_body_is_413_naming_the_setting_and_logs_no_traceback(connection, caplog):
    body = b"{" + b" " * (10 * 1024 * 1024) + b"}"
    timestamp = str(int(time.time()))
    with caplog.at_level(logging.DEBUG):
        answer = Client().post(
            f"/markets/hooks/prolific/{connection.webhook_key}/",
            data=body,
            content_type="application/json",
            HTTP_X_PROLIFIC_REQUEST_TIMESTAMP=timestamp,
            HTTP_X_PROLIFIC_REQUEST_SIGNATURE=events.prolific_signature(SECRET, timestamp, body),
        )
    assert answer.status_code == 413 and "MARKET_WEBHOOK_MAX_BYTES" in answer.json()["detail"]
    assert [record.getMessage() for record in caplog.records if record.exc_info] == []
    assert not WebhookDelivery.objects.exists()


def test_the_limit_is_the_setting_and_a_body_at_it_is_heard(connection, settings):
    settings.MARKET_WEBHOOK_MAX_BYTES = 200
    at_limit = dict(EVENT, pad="x" * (200 - len(json.dumps(dict(EVENT, pad="")))))
    assert len(json.dumps(at_limit)) == 200
    assert post_hook(connection, at_limit).status_code == 200
    over = dict(at_limit, pad=at_limit["pad"] + "x")
    assert post_hook(connection, over).status_code == 413
    assert WebhookDelivery.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_an_oversized_body_is_refused_before_a_byte_of_it_is_sent(live_server, standin):
    """Over real HTTP: the request head announces 10 MiB, and the answer comes before any of the body."""
    connection = connect_prolific(make_study(), standin)
    host, port = live_server.thread.host, live_server.thread.port
    head = (
        f"POST /markets/hooks/prolific/{connection.webhook_key}/ HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Content-Type: application/json\r\nX-Prolific-Request-Timestamp: {int(time.time())}\r\n"
        f"X-Prolific-Request-Signature: x\r\nContent-Length: {10 * 1024 * 1024}\r\nConnection: close\r\n\r\n"
    )
    with socket.create_connection((host, port), timeout=60) as sock:
        sock.sendall(head.encode("latin-1"))
        # The body is never sent: a server that reads it before answering never answers (the
        # socket's timeout ends the test as a failure).
        answer = sock.recv(65536)
    assert answer.split(b" ", 2)[1] == b"413", answer[:200]
    assert not WebhookDelivery.objects.exists()
