"""Hostile input gets a clear 4xx, never a 5xx (10 routes answered 500, three of them
open to participants). The named cases first, then every URL pattern fuzzed with hostile path,
query, form and JSON values as a researcher, a worker and an anonymous visitor."""

import json
import re
import uuid
from urllib.parse import quote

import pytest
from django.test import Client
from django.urls import URLResolver, get_resolver, reverse

from corpus.models import Dataset, LabelScheme
from crowd.models import StudySession
from dashboard import plots
from tests.collection.writing_helpers import add_premises, make_study, writing_setup
from tests.conftest import REPO_ROOT
from tests.validation.test_scheme_tasks import scheme_pairs

pytestmark = pytest.mark.django_db

PROLIFIC = {"PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1e", "STUDY_ID": "60aa11bb22cc", "SESSION_ID": "sess-001"}


def no_exceptions_client():
    return Client(raise_request_exception=False)


# --- the named cases ----------------------------------------------------------------------------


def test_a_non_ascii_signature_on_a_signed_study_link_is_a_400(db):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 2)
    study = make_study(dataset, tasks_per_batch=1)
    study.require_signed_link = True
    study.save()
    client = no_exceptions_client()
    for sig in ["é", "\u00b2", "𝟘" * 16]:
        response = client.get(reverse("study_entry", args=[study.slug]), {**PROLIFIC, "sig": sig})
        assert response.status_code == 400 and "not signed correctly" in response.content.decode(), sig
    assert not StudySession.objects.exists()


def test_a_superscript_or_huge_number_in_a_grammaticality_field_is_refused_clearly(make_worker):
    dataset, _ = scheme_pairs("gram", LabelScheme.TWO_WAY, n=2)
    Dataset.objects.filter(pk=dataset.pk).update(grammaticality_judgments=2)
    client = no_exceptions_client()
    client.force_login(make_worker().user)
    for key in ["grammar-\u00b2", "grammar-" + "9" * 30, "grammar-\u0661"]:
        response = client.post(reverse("validation:grammaticality"), {key: "none"})
        assert response.status_code < 500, key
        assert "judge at least one sentence" in response.content.decode(), key


@pytest.mark.parametrize(
    "records,message",
    [
        ([{"label": "neutral", "text": "A man\u0000 sleeps."}], "NUL"),
        ([{"label": "neutral", "text": "A man sleeps.", "words": 5}], "words must be a list of strings"),
        ([{"label": "neutral", "text": 5}], "text must be a string"),
        ([{"label": "neutral", "text": "A man \ud800 sleeps."}], "lone surrogate"),
        ([{"label": "neutral", "text": "A man sleeps.", "words": [None, {}]}], "words must be a list of strings"),
    ],
)
def test_hostile_nudge_records_are_a_400_with_the_reason(make_worker, records, message):
    client = no_exceptions_client()
    client.force_login(make_worker().user)
    response = client.post(reverse("artifacts:record_nudges"), {"records": json.dumps(records)})
    assert response.status_code == 400 and message in response.json()["error"]


def test_a_mathtext_label_draws_as_typed():
    svg = plots.heatmap([[0.5, None]], ["$\\notacommand$"], ["$x^$", "b"], "genre accuracy")
    assert "notacommand" in svg


# --- every URL pattern, fuzzed ------------------------------------------------------------------

# Raw (already %-encoded) values: NUL, a lone surrogate's bytes (invalid UTF-8), non-ASCII digits,
# a superscript, a number beyond 64 bits, a negative one, mathtext, and an accented letter.
HOSTILE = ["%00", "%ED%A0%80", "%D9%A1%D9%A2", "%C2%B2", "9" * 30, "-1", "%24%5Cnotacommand%24", "%C3%A9"]
# JSON of the wrong types and sizes for any field.
HOSTILE_JSON: list[object] = [
    5,
    -1,
    10**30,
    1e308,
    None,
    True,
    [],
    {},
    "\u0000",
    "\ud800",
    "\u0661\u0662",
    [[[]]],
    {"a": None},
]


def parameter_names():
    """Every request parameter the project reads, found in its source and its templates."""
    names = set()
    read = re.compile(r"""(?:GET|POST|query_params|data|params)\.(?:get|getlist|pop)\(\s*["']([^"']+)["']""")
    field = re.compile(r"""name="([A-Za-z_][\w-]*)""")
    for app in (
        "annotation_site",
        "base",
        "corpus",
        "crowd",
        "collection",
        "validation",
        "importers",
        "modeling",
        "artifacts",
        "quality",
        "dashboard",
        "templates",
    ):
        for path in (REPO_ROOT / app).rglob("*"):
            if path.suffix in (".py", ".html") and "migrations" not in path.parts:
                text = path.read_text(encoding="utf-8", errors="replace")
                names |= set(read.findall(text)) | set(field.findall(text))
    return sorted(names | {"grammar-1", "records", "sig", "label", "text", "claim", "dataset", "page", "cursor"})


def url_patterns():
    """(route text, URL) for every pattern, its path parameters filled with a matching value."""

    def walk(patterns, prefix=""):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern))
            else:
                yield prefix + str(pattern.pattern)

    filled = {
        "int": "9" * 30,
        "uuid": str(uuid.uuid4()),
        "slug": "x" * 300,
        "path": "%C2%B2/%C3%A9",
        "str": "%C2%B2",
        "drf_format_suffix": "json",
    }
    urls = []
    for route in walk(get_resolver().url_patterns):
        url = re.sub(r"<(?:(\w+):)?(\w+)>", lambda m: filled.get(m.group(1) or "str", "x"), route)
        url = re.sub(r"\(\?P<format>[^)]*\)", "json", url)
        url = re.sub(r"\(\?P<\w+>[^)]*\)", "%C2%B2", url)
        url = url.replace("^", "").replace("$", "").replace("\\.", ".").replace("/?", "/")
        if "(" in url or "[" in url:
            continue  # a regex this simple filler does not understand
        urls.append((route, "/" + url))
    return urls


def test_the_fuzz_covers_every_url_pattern():
    routes = [route for route, _ in url_patterns()]
    skipped = len(list(get_resolver().url_patterns))  # at least the top level
    assert len(routes) >= skipped and any("artifacts/nudges/" in r for r in routes)


def hostile_query(names, turn):
    """Every parameter at once, each with a hostile value; `turn` rotates which name gets which."""
    return "&".join(f"{quote(name)}={HOSTILE[(index + turn) % len(HOSTILE)]}" for index, name in enumerate(names))


def hostile_json(names, turn):
    return json.dumps({name: HOSTILE_JSON[(index + turn) % len(HOSTILE_JSON)] for index, name in enumerate(names)})


@pytest.mark.slow
def test_no_url_answers_5xx_to_hostile_values(researcher, make_worker):
    """Each pattern gets every known parameter name with hostile values in a few rotations (a
    request per value and name would take an hour here), as a GET, a form POST and a JSON POST."""
    names = parameter_names()
    visitors = {"worker": make_worker().user, "researcher": researcher}
    failures = []
    for who, user in visitors.items():
        client = no_exceptions_client()
        client.force_login(user)
        for route, url in url_patterns():
            if route.startswith("accounts/logout"):
                continue  # logs the client out: the rest of the run would be anonymous
            admin = route.startswith("admin/")
            if admin and (who != "researcher" or not route.endswith("/") or "<" in route):
                continue  # the admin is Django's; its lists (researchers only) take queries
            for turn in range(3):
                answers = [("GET", client.get(f"{url}?{hostile_query(names, turn)}"))]
                if not admin:
                    form = hostile_query(names, turn + 3)
                    answers.append(("POST form", client.post(url, form, "application/x-www-form-urlencoded")))
                    body = hostile_json(names, turn * 4)
                    answers.append(("POST JSON", client.post(url, body, "application/json")))
                failures += [
                    f"{who} {method} {url} (turn {turn}): {answer.status_code}"
                    for method, answer in answers
                    if answer.status_code >= 500
                ]
    assert not failures, f"{len(failures)} 5xx answers:\n" + "\n".join(failures[:40])
