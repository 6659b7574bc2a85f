"""Researchers only, on every API endpoint and every method, and on every dashboard form.

What "researcher" means (base/permissions.py): an active staff account with the
researcher permission (the `researchers` group). The rule is one for the dashboard, the API and the
admin; neither `is_staff` nor `is_superuser` alone makes a researcher, and crowdworkers' accounts
are never staff. A staff account in the group, without the superuser flag, is a researcher.

The endpoints are read from the URL configuration, so an endpoint added later without a place
here fails `test_every_api_route_is_covered`.
"""

import pytest
from django.urls import URLPattern, URLResolver, resolve, reverse
from rest_framework.test import APIClient

from corpus.models import Pair
from modeling.models import Snapshot, TrainingRun
from modeling.snapshots.services import create_snapshot, export_snapshot
from tests.present import present

METHODS = ["get", "post", "put", "patch", "delete", "head", "options"]


def api_urls(snapshot_id, pair_id, run_id):
    return [
        "/api/",
        "/api/snapshots/",
        f"/api/snapshots/{snapshot_id}/",
        f"/api/snapshots/{snapshot_id}/files/train.jsonl",
        f"/api/snapshots/{snapshot_id}/files/manifest.json",
        "/api/pairs/",
        f"/api/pairs/{pair_id}/",
        "/api/training-runs/",
        f"/api/training-runs/{run_id}/",
        f"/api/training-runs/{run_id}/checkpoint/",
        f"/api/artifacts/training-runs/{run_id}/tags/",
        f"/api/training-runs/{run_id}/cancel/",
        "/api/stats/",
        "/api/schema/",
        "/api/docs/",
        # The GPU nodes' API takes a node token only (tests/modeling/gpu_node); nobody else gets in.
        *(
            f"/api/worker/runs/{run_id}/{action}"
            for action in ("", "claim/", "progress/", "checkpoint/", "finish/", "fail/")
        ),
    ]


def route_names(patterns, namespace=""):
    names = set()
    for entry in patterns:
        if isinstance(entry, URLResolver):
            names |= route_names(entry.url_patterns, namespace)
        elif isinstance(entry, URLPattern) and entry.name:
            names.add(entry.name)
    return names


@pytest.fixture
def objects(small_corpus, researcher):
    snapshot = present(export_snapshot(create_snapshot(None)))
    run = TrainingRun.objects.create(snapshot=snapshot, snapshot_hash=snapshot.content_hash, model="majority")
    from corpus.models import Pair

    return {"snapshot_id": snapshot.pk, "pair_id": present(Pair.objects.first()).pk, "run_id": run.pk}


@pytest.fixture
def worker_client(make_worker):
    client = APIClient()
    client.force_login(make_worker().user)
    return client


def counts():
    from corpus.models import Adjudication, ValidationLabel
    from quality.models import AggregationRun, BonusEntry, ReferenceLabel

    return (
        Snapshot.objects.count(),
        TrainingRun.objects.count(),
        AggregationRun.objects.count(),
        Adjudication.objects.count(),
        BonusEntry.objects.count(),
        ReferenceLabel.objects.count(),
        ValidationLabel.objects.count(),
    )


def test_every_api_route_is_covered(objects):
    from modeling.api import urls

    covered = {resolve(url).url_name for url in api_urls(**objects)}
    assert route_names(urls.urlpatterns) - covered == set()


def test_anonymous_gets_401_and_a_worker_403_on_every_api_endpoint_and_method(objects, worker_client):
    anonymous = APIClient()
    before = counts()
    body = {"snapshot": objects["snapshot_id"], "model": "majority", "config": {}, "datasets": ["mini"]}
    for url in api_urls(**objects):
        for method in METHODS:
            kwargs = {"format": "json", "data": body} if method in ("post", "put", "patch") else {}
            refused = getattr(anonymous, method)(url, **kwargs)
            assert refused.status_code == 401, (method, url, refused.status_code)
            assert refused.has_header("WWW-Authenticate"), (method, url)
            forbidden = getattr(worker_client, method)(url, **kwargs)
            # The GPU nodes' API knows no session at all: a logged-in crowdworker is not even authenticated there.
            expected = 401 if url.startswith("/api/worker/") else 403
            assert forbidden.status_code == expected, (method, url, forbidden.status_code)
    assert counts() == before  # nothing was created, changed or deleted
    assert Snapshot.objects.get(pk=objects["snapshot_id"]).status == "done"
    assert TrainingRun.objects.get(pk=objects["run_id"]).status == "queued"  # not cancelled


def test_anonymous_posts_to_every_dashboard_page_go_to_login_and_change_nothing(objects, client):
    from dashboard import urls

    before = counts()
    forms = {
        "snapshots": {"datasets": ["mini"], "splits": ["train"], "unvalidated_gold": "author"},
        "training": {"snapshot": objects["snapshot_id"], "model": "majority", "options": "{}"},
        "aggregation": {"dataset": "mini", "methods": ["dawid_skene", "mace"]},
    }
    names = [present(pattern.name) for pattern in urls.urlpatterns]
    assert {"snapshots", "training", "report_action"} <= set(names)  # the forms
    premise_id = present(Pair.objects.first()).premise_id
    arguments = {
        "training_detail": {"run_id": objects["run_id"]},
        "chart": {"name": "hourly"},
        "training_cancel": {"run_id": objects["run_id"]},
        "report_action": {"premise_id": premise_id},
        "aggregation_detail": {"run_id": 1},
        "mpe_adjudicate": {"pair_id": present(Pair.objects.first()).pk},
        "adjudicate": {"pair_id": present(Pair.objects.first()).pk},
        "team_members": {"slug": "any-team"},
        "team_invite": {"slug": "any-team"},
        "team_member_role": {"slug": "any-team", "membership_id": 1},
        "team_member_remove": {"slug": "any-team", "membership_id": 1},
        "bonus_pay": {"slug": "any-study"},
        "bonus_release": {"slug": "any-study"},
        "bonus_give": {"slug": "any-study"},
        "imports_progress": {"kind": "pairs"},
        "bonus_export": {"slug": "any-study", "market": "prolific"},
        "adversarial_rounds": {"slug": "any-study"},
        "study": {"slug": "any-study"},
        "study_sessions_csv": {"slug": "any-study"},
        "adversarial_advance": {"slug": "any-study"},
        "adversarial_close": {"slug": "any-study", "number": 1},
        "adversarial_export": {"slug": "any-study", "number": 1},
        **{name: {"slug": "any-study"} for name in MARKET_ACTIONS},
        "market_reject": {"slug": "any-study", "session_id": 1},
        "market_batch_unpaid": {"slug": "any-study", "batch_id": 1},
        "study_settings": {"slug": "any-study"},
        "adjudication_undo": {"decision_id": 1},
        "agreement_csv": {"table": "overall"},
        "model_annotator_label": {"annotator_id": 1},
        "model_uses": {"slug": "any-study"},
    }
    forms["report_action"] = {"action": "retire"}
    forms["mpe_adjudicate"] = {"label": "entailment"}
    forms["adjudicate"] = {"decision": "entailment", "reason": "anonymous"}
    for name in names:
        url = reverse(f"dashboard:{name}", kwargs=arguments.get(name))
        response = client.post(url, forms.get(name, {}))
        assert response.status_code == 302, (name, response.status_code)
        assert response["Location"].startswith(reverse("login")) and "next=" in response["Location"], name
    assert counts() == before
    assert TrainingRun.objects.get(pk=objects["run_id"]).status == "queued"  # not cancelled


MARKET_ACTIONS = [
    "market_connection",
    "market_test",
    "market_approve",
    "market_pay",
    "market_reconcile",
    "market_lists",
]


@pytest.fixture
def staff_only(django_user_model):
    """Staff in the researcher group, not superuser: the least account the rule makes a researcher
    (a researcher of the default team, where the objects are: docs/teams.md)."""
    from base.permissions import ensure_researcher_group
    from teams.services import join

    user = django_user_model.objects.create_user("staff-only", password="staff-pass-1", is_staff=True)
    user.groups.add(ensure_researcher_group())
    join(user)
    return user


def test_a_staff_account_without_superuser_is_a_researcher(objects, client, staff_only):
    client.force_login(staff_only)
    assert client.get(reverse("dashboard:snapshots")).status_code == 200
    api = APIClient()
    api.force_login(staff_only)
    assert api.get("/api/training-runs/").status_code == 200
    assert api.get(f"/api/snapshots/{objects['snapshot_id']}/").json()["id"] == objects["snapshot_id"]


@pytest.mark.parametrize(
    "flags",
    [
        {"is_staff": False, "is_superuser": True},  # superuser without staff: not a researcher
        {"is_staff": True, "is_active": False},  # a staff account switched off
        {"is_staff": True},  # staff alone, outside the researcher group
    ],
)
def test_accounts_the_rule_does_not_make_researchers_are_refused(objects, client, django_user_model, flags):
    user = django_user_model.objects.create_user("not-researcher", password="pass-1-not-r", **flags)
    client.force_login(user)
    dashboard = client.get(reverse("dashboard:snapshots"))
    before = counts()
    posted = client.post(reverse("dashboard:training"), {"snapshot": objects["snapshot_id"], "model": "majority"})
    api = APIClient()
    api.force_login(user)
    listing = api.get("/api/training-runs/")
    launched = api.post("/api/training-runs/", {"snapshot": objects["snapshot_id"], "model": "majority"}, format="json")
    if flags.get("is_active", True):
        assert (dashboard.status_code, posted.status_code) == (403, 403)
        assert (listing.status_code, launched.status_code) == (403, 403)
    else:  # Django logs an inactive account out: it is anonymous again
        assert dashboard.status_code == posted.status_code == 302
        assert listing.status_code == launched.status_code == 401
    assert counts() == before


def test_the_demo_researcher_is_a_researcher_and_its_worker_is_not(db):
    from base.permissions import is_researcher
    from demo.content import ensure_accounts

    researcher, worker, authors, validators = ensure_accounts()
    assert is_researcher(researcher)
    assert not any(is_researcher(w.user) for w in [worker, *authors, *validators])
