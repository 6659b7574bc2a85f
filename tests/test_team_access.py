"""The access matrix: every researcher URL of the dashboard and every API route, for
anonymous visitors, a crowd participant, a researcher of another team, each role of the owning
team and a superuser. The URL lists are read from the URLconf, so a new URL fails the test until
it is put in one of the classes below (and with it in the matrix of docs/teams.md)."""

import json
import re

import pytest
from django.contrib import admin
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from adversarial.models import AdversarialStudy, Round
from base.permissions import ensure_researcher_group
from collection.models import PremiseImport
from corpus.models import Dataset, Genre, ImportStatus, ItemKind, Pair, Premise
from crowd.models import Study, StudySession, TaskKind
from dashboard.admin_teams import GLOBAL_MODELS, team_path
from importers.models import CorpusImport
from markets.models import BonusBatch, MarketConnection
from modeling.models import Snapshot, TrainingRun
from quality.models import AggregationRun
from teams import access
from teams.models import Membership, Role, Team
from tests.importers.test_recasting import SENTENCES

pytestmark = pytest.mark.django_db

MONEY, VIEW, LABEL, RESEARCH, EXPORT = access.MONEY, access.VIEW, access.LABEL, access.RESEARCH, access.EXPORT
MEMBERS = access.MEMBERS
ROLES = ["anonymous", "participant", "other_team", Role.OWNER, Role.RESEARCHER, Role.ANNOTATOR, "superuser"]

# Dashboard URLs that name one object of a team: (method, what the role must be allowed).
DASHBOARD_OBJECT_URLS = {
    "study": ("GET", VIEW),
    "study_sessions_csv": ("GET", EXPORT),
    "bonus_export": ("GET", MONEY),
    "bonus_pay": ("POST", MONEY),
    "bonus_release": ("POST", MONEY),
    "bonus_give": ("POST", MONEY),
    "market_connection": ("POST", MONEY),
    "market_test": ("POST", MONEY),
    "market_approve": ("POST", MONEY),
    "market_reject": ("POST", MONEY),
    "market_pay": ("POST", MONEY),
    "market_reconcile": ("POST", MONEY),
    "market_batch_unpaid": ("POST", MONEY),
    "market_lists": ("POST", MONEY),
    "report_action": ("POST", RESEARCH),
    "training_detail": ("GET", VIEW),
    "training_cancel": ("POST", RESEARCH),
    "aggregation_detail": ("GET", VIEW),
    "adjudicate": ("POST", LABEL),
    "mpe_adjudicate": ("POST", LABEL),
    "adversarial_rounds": ("GET", VIEW),
    "adversarial_advance": ("POST", RESEARCH),
    "adversarial_close": ("POST", RESEARCH),
    "adversarial_export": ("GET", EXPORT),
    "snapshot_release": ("POST", RESEARCH),
    "study_settings": ("GET", RESEARCH),
    "adjudication_undo": ("POST", LABEL),
    "assign_splits": ("POST", RESEARCH),
    "model_annotator_label": ("POST", RESEARCH),
    "model_uses": ("GET", RESEARCH),
    "mark_validation": ("POST", RESEARCH),
    "team_members": ("GET", MEMBERS),
    "team_invite": ("POST", MEMBERS),
    "team_member_role": ("POST", MEMBERS),
    "team_member_remove": ("POST", MEMBERS),
}
# Object URLs whose answer to an unknown id is a message on the page they return to (not a 404):
# a foreign id, or one the role may not act on, gets the same message.
ANSWERED_AS_UNKNOWN = {"snapshot_release"}
# Dashboard lists whose rows are narrowed to the user's teams: another team's researcher sees
# none of the owning team's objects on them.
DASHBOARD_SCOPED_LISTS = {
    "studies": "study-a",
    "markets": "study-a",
    "bonuses": "study-a",
    "snapshots": "<td>dataset-a</td>",
    "training": "TRAINING_LINK",
    "aggregation": "aggregation-a-marker",
    "audit": "study-a",
    "model_annotators": "annotator-a-marker",
    "imports": "premises-a-marker.txt",
    "adversarial": "adv-a",
    "teams": "Team A",
}
# Figure pages, their CSV and images: every figure is of the user's teams' datasets (all of them
# unless one is chosen; another team's dataset is as unknown as a typo). Checked below with what
# only team A's data puts on each (FIGURE_PAGES).
DASHBOARD_FIGURES = {
    "collection",
    "chart",
    "validation",
    "corpus",
    "workers",
    "pairs",
    "costs",
    "artifacts",
    "adjudication",
    "mpe",
    "stopping",
    "label_pairs",
    "agreement_csv",
}
# A release's file (?release=NAME&path=PATH): its team is its snapshot's (checked below).
DASHBOARD_RELEASE_FILE = "release_file"
# Pages every researcher reaches that are NOT yet narrowed to the user's teams (docs/teams.md,
# "Not scoped yet"), or need no narrowing, and why.
DASHBOARD_NOT_SCOPED_YET = {
    "worker_exclusion": "workers are shared: an exclusion moves every team's gold",
    "reports": "premise reports of the user's teams' datasets (not checked here)",
    "imports_progress": "progress of the user's teams' imports named (checked below)",
    "snapshots_progress": "polls the user's snapshots (scoped); kept here as a progress poll",
    "training_progress": "polls the user's runs (scoped); kept here as a progress poll",
    "aggregation_progress": "polls the user's runs (scoped); kept here as a progress poll",
    "model_annotators_progress": "polls the user's labelling jobs (scoped); kept here as a progress poll",
    "recast": "a form: a recast into another team's dataset is refused, a new one is the user's team's (checked below)",
    "audit_csv": "scoped (EXPORT roles' teams); a file, checked below",
    "study_new": "a form: its datasets are the user's teams' (RESEARCH), and the study joins its dataset's team",
    "pairs_bulk": "acts only on pairs of the user's teams where they may do research (checked below)",
    "pairs_bulk_undo": "undoes only a bulk action of the user's research teams (tests/dashboard/test_pair_bulk_actions.py)",
    "privacy": "finds participants of the user's research teams only; another team's id is unknown (tests/privacy)",
    "privacy_download": "the same search: another team's participant is answered as unknown (tests/privacy)",
    "privacy_erase": "the same search: another team's participant is answered as unknown, nothing changes (tests/privacy)",
    "start_tagging": "the dataset chosen, else one job per dataset of the user's teams (checked below)",
    "refresh_monitor": "the dataset chosen, else one refit per dataset of the user's teams (checked below)",
}
# API routes: a team's object (detail), a list narrowed to the user's teams, not scoped yet, or the GPU nodes'.
API_OBJECT_ROUTES = {
    "snapshot-detail": EXPORT,
    "snapshot-file": EXPORT,
    "pair-detail": EXPORT,
    "training-run-detail": VIEW,
    "training-run-cancel": RESEARCH,
    "training-run-checkpoint": VIEW,
    "artifacts-run-tags": VIEW,
    "premise-label-detail": EXPORT,
    "audit-entry-detail": EXPORT,
}
API_SCOPED_LISTS = {"snapshot-list", "pair-list", "training-run-list", "premise-label-list", "audit-entry-list"}
# Figure routes: of the user's teams' datasets (another team's named: 404), checked below.
API_FIGURE_ROUTES = {"api-agreement", "agreement-stats", "artifacts-tags", "artifacts-giveaway-words"}
API_NOT_SCOPED_YET = {
    "api-root": "the router's index",
    "api-schema": "the API's schema",
    "api-docs": "the schema's page",
}
API_NODE_ROUTES_PREFIX = "worker-"  # GPU nodes with a node token (modeling/api/node.py), not researchers
# Pages outside the dashboard, the admin and the API that a researcher opens on one team's object,
# and what the role must be allowed: the study preview (its GET asks, its POST starts it) serves
# the study's premises and pairs.
SITE_RESEARCHER_OBJECT_URLS = {"study_preview_start": VIEW}
# Every other page outside the dashboard, the admin and the API, and why it names no team's object.
SITE_NO_TEAMS_OBJECT = {
    **dict.fromkeys(
        [
            "login",
            "logout",
            "password_change",
            "password_change_done",
            "password_reset",
            "password_reset_done",
            "password_reset_confirm",
            "password_reset_complete",
        ],
        "the visitor's own account",
    ),
    "home": "the visitor's own page",
    "study_entry": "a participant's arrival by a study link (workers are shared by teams)",
    "preview_end": "ends this browser's own preview",
    "qualification": "the test of the browser's own study session (a preview's only after its start)",
    "faq": "a task's help page, no team's data",
    **dict.fromkeys(
        [
            "writing_next",
            "writing_task",
            "writing_resubmit",
            "writing_renew",
            "validation:next",
            "validation:batch",
            "validation:batch-renew",
            "validation:faq",
            "validation:mpe-next",
            "validation:mpe-batch",
            "validation:mpe-batch-renew",
            "validation:premise-next",
            "validation:premise-batch",
            "validation:premise-batch-renew",
            "validation:grammaticality",
            "validation:grammaticality-renew",
            "adversarial:next",
            "adversarial:task",
            "adversarial:try",
            "adversarial:renew",
            "adversarial:reason",
            "artifacts:score",
            "artifacts:record_nudges",
        ],
        "a task of the visitor's own claim or study session (a preview's: served by crowd.preview)",
    ),
    "markets:prolific_webhook": "the market's call, checked by its connection's secret key",
    **dict.fromkeys(
        ["consent:sheet", "consent:declined", "consent:withdraw"],
        "the participant's own consent to the study of their own study session",
    ),
}


def _names(patterns, prefix=""):
    for entry in patterns:
        if isinstance(entry, URLResolver):
            namespace = f"{entry.namespace}:" if entry.namespace else prefix
            route = str(entry.pattern)
            yield from ((route + r, n) for r, n in _names(entry.url_patterns, namespace))
        elif isinstance(entry, URLPattern) and entry.name:
            yield str(entry.pattern), prefix + entry.name


def _urlconf():
    return list(_names(get_resolver().url_patterns))


def dashboard_names():
    return {name.split(":", 1)[1] for _, name in _urlconf() if name.startswith("dashboard:")}


def api_names():
    return {name.split(":")[-1] for route, name in _urlconf() if route.startswith("api/")}


def site_names():
    """Every URL name outside the dashboard, the admin and the API (a namespaced one whole)."""
    return {
        name
        for route, name in _urlconf()
        if not route.startswith("api/") and name.split(":", 1)[0] not in ("dashboard", "admin")
    }


def test_every_url_is_in_the_matrix():
    classified = set(DASHBOARD_OBJECT_URLS) | set(DASHBOARD_SCOPED_LISTS) | DASHBOARD_FIGURES
    classified |= {*DASHBOARD_NOT_SCOPED_YET, DASHBOARD_RELEASE_FILE}
    assert DASHBOARD_FIGURES - {"chart", "agreement_csv"} == set(FIGURE_PAGES)
    assert dashboard_names() - classified == set(), "new dashboard URL(s): put them in the matrix"
    assert classified - dashboard_names() == set()
    api = {name for name in api_names() if not name.startswith(API_NODE_ROUTES_PREFIX)}
    api = {name.removesuffix("-format") for name in api}
    known = set(API_OBJECT_ROUTES) | API_SCOPED_LISTS | API_FIGURE_ROUTES | set(API_NOT_SCOPED_YET)
    assert api - known == set(), "new API route(s): put them in the matrix"
    site = set(SITE_RESEARCHER_OBJECT_URLS) | set(SITE_NO_TEAMS_OBJECT)
    assert site_names() - site == set(), "new page(s) outside the dashboard: put them in the matrix"
    assert site - site_names() == set()


def test_every_admin_is_narrowed_to_teams_or_said_to_be_shared():
    from dashboard.admin import TEAM_PATHS

    for model in admin.site._registry:
        label = model._meta.label_lower
        assert team_path(model) is not None or label in GLOBAL_MODELS, f"{label}: scope its admin or say why not"
        # and narrowed in fact: an admin registered after dashboard/admin.py ran (from an app's
        # ready(), as the qualification admins once were) would escape the narrowing.
        if team_path(model) is not None:
            assert label in TEAM_PATHS, f"{label} has a team path but its admin was registered too late to be narrowed"


@pytest.fixture
def world(django_user_model):
    return build_world(django_user_model)


def build_world(django_user_model):
    """Two teams and team A's rows and users, in every role (the access matrix's world; the
    audit-doors test builds the same)."""
    team_a = Team.objects.create(slug="team-a", name="Team A")
    team_b = Team.objects.create(slug="team-b", name="Team B")
    genre = Genre.objects.get(slug="fiction")
    dataset = Dataset.objects.create(slug="dataset-a", name="dataset-a", team=team_a)
    mpe = Dataset.objects.create(slug="mpe-a", name="mpe-a", team=team_a, item_kind=ItemKind.MULTI_PREMISE)
    Dataset.objects.create(slug="dataset-b", name="dataset-b", team=team_b)
    premise = Premise.objects.create(dataset=dataset, genre=genre, prompt_id="p1", text="A man sleeps.", split="dev")
    pair = Pair.objects.create(
        dataset=dataset, premise=premise, pair_id="1e", hypothesis="A man rests.", author_label="entailment"
    )
    mpe_premise = Premise.objects.create(dataset=mpe, genre=genre, prompt_id="m1", text="Two dogs run.", split="dev")
    mpe_pair = Pair.objects.create(
        dataset=mpe, premise=mpe_premise, pair_id="1m", hypothesis="Dogs run.", author_label="entailment"
    )
    study = Study.objects.create(
        slug="study-a", name="study-a", dataset=dataset, team=team_a, task_kind=TaskKind.VALIDATION, completion_code="A"
    )
    adversarial = Study.objects.create(
        slug="adv-a", name="adv-a", dataset=dataset, team=team_a, task_kind=TaskKind.ADVERSARIAL, completion_code="A"
    )
    AdversarialStudy.objects.create(study=adversarial)
    Round.objects.create(study=adversarial, number=1, dataset=dataset, target_endpoint="http://127.0.0.1:9/")
    participant = django_user_model.objects.create_user("participant-a", password="pw")
    from corpus.models import Worker

    worker = Worker.objects.create(user=participant, external_id="w-a")
    session = StudySession.objects.create(study=study, worker=worker, external_session_id="s-a")
    connection = MarketConnection.objects.create(
        study=study,
        market="prolific",
        market_study_id="5fa0000000000000000000a1",
        sealed_credentials="x",
        webhook_key="k-a",
    )
    batch = BonusBatch.objects.create(connection=connection, csv_bonuses="", lease_until=timezone.now())
    snapshot = Snapshot.objects.create(team=team_a, datasets=["dataset-a"], filters={"marker": "snapshot-a-marker"})
    run = TrainingRun.objects.create(
        snapshot=snapshot, snapshot_hash="h", model="majority", config={"marker": "run-a-marker"}
    )
    aggregation = AggregationRun.objects.create(
        dataset=dataset,
        methods=["dawid_skene"],
        stage="aggregation-a-marker",
        figures={"dawid_skene": {"pairs": 0, "agree_with_gold": 0, "overrules": 0, "resolves": 0, "seconds": 0}},
    )
    from corpus.models import Adjudication, AdjudicationSource

    decision = Adjudication.objects.create(
        pair=pair, label="neutral", previous_gold="", source=AdjudicationSource.RESEARCHER, reason="r"
    )
    from model_annotators.models import ModelAnnotator

    premise_import = PremiseImport.objects.create(
        dataset=dataset, genre=genre, source="premises-a-marker.txt", status=ImportStatus.DONE
    )
    corpus_import = CorpusImport.objects.create(
        dataset=dataset, source="pairs-a-marker.jsonl", split="dev", status=ImportStatus.DONE
    )
    annotator = ModelAnnotator.objects.create(
        name="annotator-a-marker", dataset=dataset, kind="endpoint", base_url="http://127.0.0.1:9/v1", model_name="m"
    )
    from audit import services as audit

    audit.record("study.settings", subject=study, team_id=team_a.pk, after={"name": "study-a"})
    group = ensure_researcher_group()
    users = {"participant": participant}
    for role, team in [
        ("other_team", team_b),
        (Role.OWNER, team_a),
        (Role.RESEARCHER, team_a),
        (Role.ANNOTATOR, team_a),
    ]:
        user = django_user_model.objects.create_user(f"r-{role}", password="pw", is_staff=True)
        user.groups.add(group)
        Membership.objects.create(team=team, user=user, role=Role.OWNER if role == "other_team" else role)
        users[role] = user
    users["superuser"] = django_user_model.objects.create_user("root", password="pw", is_staff=True, is_superuser=True)
    args = {
        "study": ["study-a"],
        "study_sessions_csv": ["study-a"],
        "bonus_export": ["study-a", "prolific"],
        "bonus_pay": ["study-a"],
        "bonus_release": ["study-a"],
        "bonus_give": ["study-a"],
        "market_connection": ["study-a"],
        "market_test": ["study-a"],
        "market_approve": ["study-a"],
        "market_reject": ["study-a", session.pk],
        "market_pay": ["study-a"],
        "market_reconcile": ["study-a"],
        "market_batch_unpaid": ["study-a", batch.pk],
        "market_lists": ["study-a"],
        "report_action": [premise.pk],
        "training_detail": [run.pk],
        "training_cancel": [run.pk],
        "aggregation_detail": [aggregation.pk],
        "adjudicate": [pair.pk],
        "mpe_adjudicate": [mpe_pair.pk],
        "adversarial_rounds": ["adv-a"],
        "adversarial_advance": ["adv-a"],
        "adversarial_close": ["adv-a", 1],
        "adversarial_export": ["adv-a", 1],
        "snapshot_release": [],
        "study_settings": ["study-a"],
        "adjudication_undo": [decision.pk],
        "assign_splits": [],
        "model_annotator_label": [annotator.pk],
        "model_uses": ["study-a"],
        "mark_validation": [],
        # The owner's own membership: as the team's only owner it is neither removed nor demoted,
        # so every role's POST leaves the team as it was.
        "team_members": ["team-a"],
        "team_invite": ["team-a"],
        "team_member_role": ["team-a", Membership.objects.get(team=team_a, role=Role.OWNER).pk],
        "team_member_remove": ["team-a", Membership.objects.get(team=team_a, role=Role.OWNER).pk],
    }
    post = {
        "snapshot_release": {"snapshot": str(snapshot.pk)},
        "assign_splits": {"dataset": "dataset-a"},
        "mark_validation": {"dataset": "dataset-a", "share": "10"},
    }
    api_args = {
        "snapshot-detail": [snapshot.pk],
        "snapshot-file": [snapshot.pk, "manifest.json"],
        "pair-detail": [pair.pk],
        "training-run-detail": [run.pk],
        "training-run-cancel": [run.pk],
        "training-run-checkpoint": [run.pk],
        "artifacts-run-tags": [run.pk],
        "audit-entry-detail": [],
        "premise-label-detail": [],
    }
    return {
        "users": users,
        "args": args,
        "post": post,
        "api_args": api_args,
        "pair": pair,
        "snapshot": snapshot,
        "run": run,
        "premise_import": premise_import,
        "corpus_import": corpus_import,
    }


def _client(client, world, role):
    if role != "anonymous":
        client.force_login(world["users"][role])
    return client


def _expected_dashboard(role, action):
    """What a role gets: 'login', 403, 404, or 'ok' (any answer but 403 and 404)."""
    if role == "anonymous":
        return "login"
    if role == "participant":
        return 403
    if role == "other_team":
        return 404
    if role == "superuser":
        return "ok"
    return "ok" if access.may_role(role, action) else 403


def _seen(response):
    if response.status_code in (403, 404):
        return response.status_code
    if response.status_code == 302 and "/accounts/login/" in response.get("Location", ""):
        return "login"
    return "ok"


@pytest.mark.parametrize("role", ROLES)
def test_dashboard_object_urls(client, world, role):
    client = _client(client, world, role)
    wrong = []
    for name, (method, action) in DASHBOARD_OBJECT_URLS.items():
        url = reverse(f"dashboard:{name}", args=world["args"][name])
        call = client.post if method == "POST" else client.get
        got = _seen(call(url, world["post"].get(name, {})))
        expected = _expected_dashboard(role, action)
        if name in ANSWERED_AS_UNKNOWN and expected in (403, 404) and role != "participant":
            expected = "ok"  # the page's own answer to an unknown id: a message, for a foreign one too
        if got != expected:
            wrong.append((name, got, expected))
    assert wrong == []


@pytest.mark.parametrize("role", ROLES)
def test_site_object_urls(client, world, role):
    """The study preview, asked (GET) and started (POST): another team's study is unknown (404)."""
    client = _client(client, world, role)
    wrong = []
    for name, action in SITE_RESEARCHER_OBJECT_URLS.items():
        url = reverse(name, args=["study-a"])
        for call in (client.get, client.post):
            got, expected = _seen(call(url)), _expected_dashboard(role, action)
            if got != expected:
                wrong.append((name, call.__name__, got, expected))
    assert wrong == []
    started = StudySession.objects.filter(study__slug="study-a", is_preview=True).exists()
    assert started == (_expected_dashboard(role, VIEW) == "ok")


def test_a_foreign_id_answers_as_an_unknown_one(client, world):
    client = _client(client, world, "other_team")
    foreign = client.get(reverse("dashboard:study", args=["study-a"]))
    unknown = client.get(reverse("dashboard:study", args=["no-such-study"]))
    assert foreign.status_code == unknown.status_code == 404

    def page(response, slug):
        return re.sub(rb'name="csrfmiddlewaretoken" value="[^"]*"', b"", response.content.replace(slug, b"ID"))

    assert page(foreign, b"study-a") == page(unknown, b"no-such-study")


@pytest.mark.parametrize("role", ROLES)
def test_dashboard_lists(client, world, role):
    client = _client(client, world, role)
    for name, marker in DASHBOARD_SCOPED_LISTS.items():
        if marker == "TRAINING_LINK":
            marker = reverse("dashboard:training_detail", args=[world["run"].pk])
        response = client.get(reverse(f"dashboard:{name}"))
        expected = "ok" if role == "other_team" else _expected_dashboard(role, VIEW)
        assert _seen(response) == expected, name
        if expected == "ok":
            text = response.content.decode()
            shown = marker in text
            may_see = role != "other_team" and (
                name not in ("markets", "bonuses") or access.may_role(role, MONEY) or role == "superuser"
            )
            assert shown == may_see, (name, role)
    for name in [*DASHBOARD_FIGURES, *DASHBOARD_NOT_SCOPED_YET]:
        if name in ("chart", "worker_exclusion", "imports_progress", "agreement_csv"):
            continue  # need arguments or POST: their decorators are checked like every page's
        expected = "ok" if role == "other_team" else _expected_dashboard(role, VIEW)
        assert _seen(client.get(reverse(f"dashboard:{name}"))) in (expected, 404), name


@pytest.mark.parametrize("role", ["other_team", Role.RESEARCHER, "superuser"])
def test_imports_and_their_progress_are_the_users_teams_only(client, world, role):
    """The imports page lists only imports into the user's teams' datasets (both kinds) and offers
    only their datasets; its progress poll answers for their imports only (another's id as unknown)."""
    client = _client(client, world, role)
    text = client.get(reverse("dashboard:imports")).content.decode()
    mine = role != "other_team"
    assert ("premises-a-marker.txt" in text) == mine
    assert ("pairs-a-marker.jsonl" in text) == mine
    assert ('<option value="dataset-a">' in text) == mine
    assert ('<option value="dataset-b">' in text) == (role != Role.RESEARCHER)
    for kind, run in [("premises", world["premise_import"]), ("pairs", world["corpus_import"])]:
        url = reverse("dashboard:imports_progress", args=[kind]) + f"?ids={run.pk}"
        items = client.get(url).json()["items"]
        assert [item["id"] for item in items] == ([run.pk] if mine else []), (kind, role)


def test_a_queued_import_names_another_teams_running_import_by_number_only(client, world):
    """What a queued import waits behind: another team's running import is named by its number,
    not by its file's name."""
    running = PremiseImport.objects.create(
        dataset=Dataset.objects.get(slug="dataset-a"),
        genre=Genre.objects.get(slug="fiction"),
        source="running-a-marker.txt",
        status=ImportStatus.RUNNING,
        started_at=timezone.now(),
    )
    CorpusImport.objects.create(
        dataset=Dataset.objects.get(slug="dataset-b"), source="queued-b.jsonl", split="dev", status=ImportStatus.QUEUED
    )
    client.force_login(world["users"]["other_team"])
    text = client.get(reverse("dashboard:imports")).content.decode()
    assert "queued-b.jsonl" in text and f"premise import #{running.pk}" in text
    assert "running-a-marker.txt" not in text
    client.force_login(world["users"]["superuser"])
    assert (
        f"premise import #{running.pk} (running-a-marker.txt)"
        in client.get(reverse("dashboard:imports")).content.decode()
    )


def test_a_recast_named_like_another_teams_dataset_makes_the_users_own(client, world):
    """The recast page previews and saves into the user's teams' datasets only. A name another team
    uses is neither reached nor named: it makes a new dataset of the user's team, as an unknown name
    does (no preview of the other team's pair ids, nothing of theirs changed); a team other than the
    default one keeps its new datasets under its own prefix (`<team>--<name>`, docs/teams.md)."""
    url = reverse("dashboard:recast")
    rows = "".join(json.dumps(row) + "\n" for row in SENTENCES[:3])
    form = {"template": "puns", "dataset": "dataset-a", "split": "dev", "format": "jsonl", "rows": rows, "seed": "0"}
    theirs = list(Pair.objects.filter(dataset__slug="dataset-a").values_list("pk", "pair_id", "hypothesis"))
    client.force_login(world["users"]["other_team"])
    as_foreign = client.post(url, {**form, "action": "preview"})
    as_unknown = client.post(url, {**form, "dataset": "never-named", "action": "preview"})
    assert as_foreign.status_code == as_unknown.status_code == 200
    ids = re.compile(r'class="recast-pair"[^>]*>\s*<td>([^<]*)<')
    assert ids.findall(as_foreign.content.decode()) == ids.findall(as_unknown.content.decode())
    assert "That dataset name is taken" not in as_foreign.content.decode()
    assert client.post(url, {**form, "action": "save"}).status_code == 302
    mine = Dataset.objects.get(slug="team-b--dataset-a")
    assert (mine.team.slug, mine.name, mine.pairs.count()) == ("team-b", "dataset-a", 6)
    assert list(Pair.objects.filter(dataset__slug="dataset-a").values_list("pk", "pair_id", "hypothesis")) == theirs
    client.force_login(world["users"][Role.RESEARCHER])
    preview = client.post(url, {**form, "action": "preview"})
    assert preview.status_code == 200 and preview.content.decode().count('class="recast-pair"') == 6
    assert client.post(url, {**form, "dataset": "recast-a", "action": "save"}).status_code == 302
    made = Dataset.objects.get(name="recast-a")
    assert (made.slug, made.team.slug, made.pairs.count()) == ("team-a--recast-a", "team-a", 6)
    # Each save is in the audit log of its dataset's team, with who did it and what it made.
    from audit.models import AuditEntry

    entries = {entry.subject: entry for entry in AuditEntry.objects.filter(action="import.recast")}
    assert set(entries) == {"team-a--recast-a", "team-b--dataset-a"}, entries
    assert entries["team-a--recast-a"].team_id == made.team_id
    assert entries["team-a--recast-a"].after["pairs"] == 6
    assert entries["team-b--dataset-a"].actor == world["users"]["other_team"].username


def test_tagging_and_the_monitor_refresh_with_no_dataset_act_on_the_users_teams_datasets(
    client, world, django_user_model
):
    """Started from the artifacts page with no dataset chosen, tagging makes one job per dataset of
    the user's teams and the monitor's refresh one refit each: another team's researcher tags and
    refits only their own; a team with no dataset is told so; a superuser's press is one job over
    every dataset, as the command's."""
    from artifacts.models import TaggingJob

    tag, refresh = reverse("dashboard:start_tagging"), reverse("dashboard:refresh_monitor")

    def slugs_of(team):
        return sorted(Dataset.objects.filter(team__slug=team).values_list("slug", flat=True))

    for role, team in (("other_team", "team-b"), (Role.RESEARCHER, "team-a")):
        TaggingJob.objects.all().delete()
        client.force_login(world["users"][role])
        client.post(tag)
        assert sorted(TaggingJob.objects.values_list("dataset__slug", flat=True)) == slugs_of(team), role
        refit = client.post(refresh, follow=True).content.decode()
        assert f"The monitor&#x27;s refresh on {', '.join(slugs_of(team))} is queued" in refit, role

    empty_team = Team.objects.create(slug="team-c", name="Team C")
    newcomer = django_user_model.objects.create_user("r-newcomer", password="pw", is_staff=True)
    newcomer.groups.add(ensure_researcher_group())
    Membership.objects.create(team=empty_team, user=newcomer, role=Role.OWNER)
    client.force_login(newcomer)
    TaggingJob.objects.all().delete()
    assert "Your teams have no dataset to tag yet." in client.post(tag, follow=True).content.decode()
    assert "no dataset to refit the monitor on yet" in client.post(refresh, follow=True).content.decode()
    assert not TaggingJob.objects.exists()

    client.force_login(world["users"]["superuser"])
    client.post(tag)
    assert TaggingJob.objects.filter(dataset=None).count() == 1


@pytest.mark.parametrize("action", ["retire", "adjudicate", "exclude"])
def test_a_bulk_action_reaches_only_the_users_teams_pairs(client, world, action):
    """The pair browser's bulk actions filter by text over every dataset they are given: another
    team's researcher changes nothing of team A's (no decision, no request, no exclusion, no audit
    entry); the owning team's researcher does."""
    from audit.models import AuditEntry
    from modeling.models import SnapshotExclusion
    from validation.models import AdjudicationRequest

    pair = world["pair"]
    form = {"text": "man rests", "action": action, "reason": "bulk", "expected": "1"}

    def changed():
        pair.refresh_from_db()
        return {
            "retire": pair.adjudicated_label == "-",
            "adjudicate": AdjudicationRequest.objects.filter(pair=pair).exists(),
            "exclude": SnapshotExclusion.objects.filter(pair=pair).exists(),
        }[action]

    entries = AuditEntry.objects.count()
    _client(client, world, "other_team").post(reverse("dashboard:pairs_bulk"), form)
    assert not changed()
    assert AuditEntry.objects.count() == entries
    client.logout()
    _client(client, world, Role.RESEARCHER).post(reverse("dashboard:pairs_bulk"), form)
    assert changed()


@pytest.mark.parametrize("role", ROLES)
def test_api_routes(client, world, role):
    client = _client(client, world, role)
    for name, action in API_OBJECT_ROUTES.items():
        if not world["api_args"][name]:
            continue  # no such object in the world (lists are checked below)
        url = reverse(name, args=world["api_args"][name])
        call = client.post if name.endswith("cancel") else client.get
        status = call(url).status_code
        if role == "anonymous":
            assert status in (401, 403), name
        elif role in ("participant",):
            assert status == 403, name
        elif role == "other_team":
            assert status == 404, name
        elif role == "superuser" or access.may_role(role, action):
            # A snapshot not exported, a run without a checkpoint or results: 404 naming what is missing.
            missing_files = ("snapshot-file", "training-run-checkpoint", "artifacts-run-tags")
            assert status not in (401, 403, 404) or name in missing_files, (name, status)
        else:
            assert status in (403, 404), (name, status)
    for name in sorted(API_SCOPED_LISTS):
        response = client.get(reverse(name))
        if role in ("anonymous", "participant"):
            assert response.status_code in (401, 403), name
            continue
        assert response.status_code == 200, (name, response.status_code)
        ids = [row["id"] for row in response.json()["results"]]
        if role == "other_team":
            assert ids == [], name


def test_api_tokens_carry_their_owners_teams(client, world):
    from rest_framework.authtoken.models import Token

    token = Token.objects.create(user=world["users"]["other_team"])
    url = reverse("pair-detail", args=[world["pair"].pk])
    assert client.get(url, HTTP_AUTHORIZATION=f"Token {token.key}").status_code == 404
    token = Token.objects.create(user=world["users"][Role.RESEARCHER])
    assert client.get(url, HTTP_AUTHORIZATION=f"Token {token.key}").status_code == 200


def test_admin_lists_only_the_teams_rows(client, world):
    client = _client(client, world, "other_team")
    page = client.get(reverse("admin:crowd_study_changelist"))
    assert page.status_code == 200 and "study-a" not in page.content.decode()
    study = Study.objects.get(slug="study-a")
    assert client.get(reverse("admin:crowd_study_change", args=[study.pk])).status_code in (302, 404)
    client.force_login(world["users"][Role.OWNER])
    assert "study-a" in client.get(reverse("admin:crowd_study_changelist")).content.decode()


def test_a_qualification_tests_admin_offers_only_the_teams_reference_labels(client, world):
    """The qualification test's admin form (items: reference labels, a many-to-many field) offers
    only the user's teams' pairs; another team's owner sees none of team A's, team A's owner does."""
    from quality.models import ReferenceLabel

    reference = ReferenceLabel.objects.create(pair=world["pair"], label="entailment")
    add_form = reverse("admin:quality_qualificationtest_add")

    def offered(response):
        assert response.status_code == 200
        return set(response.context["adminform"].form.fields["items"].queryset)

    client = _client(client, world, "other_team")
    assert reference not in offered(client.get(add_form))
    client.force_login(world["users"][Role.OWNER])
    assert reference in offered(client.get(add_form))


def test_a_snapshot_of_another_teams_dataset_is_refused_as_unknown(world):
    from django.core.exceptions import ValidationError

    from modeling.snapshots.services import create_snapshot

    with pytest.raises(ValidationError, match="unknown dataset"):
        create_snapshot(world["users"]["other_team"], datasets=["dataset-a"])
    mine = create_snapshot(world["users"]["other_team"])
    assert mine.team.slug == "team-b" and mine.datasets == ["dataset-b"]


# Figure pages, files and API routes (docs/teams.md, "Figures"): with no dataset chosen their
# figures add up every dataset of the user's teams, and a chosen dataset of another team is as
# unknown as a typo. Each with what only team A's data puts on it.
FIGURE_PAGES = {
    "collection": "import-a-marker",
    "corpus": ">Fiction<",
    "validation": ">Fiction<",
    "workers": "w-a",
    "pairs": "A man rests.",
    "costs": 'data-study="study-a"',
    "artifacts": "tagging-a-marker",
    "adjudication": 'id="table-decisions"',
    "mpe": "Word overlap",
    "stopping": 'id="stopping-dataset-a-',
    "label_pairs": "A man rests.",
}


@pytest.fixture
def figures(world):
    """Team A's data on the figure pages: a written pair (its author the worker w-a) waiting for
    validation, a session's tasks, an import, a tagging job; team B has none."""
    from artifacts.models import TaggingJob
    from corpus import tallies
    from corpus.models import Worker
    from importers.models import CorpusImport

    pair = world["pair"]
    Pair.objects.filter(pk=pair.pk).update(author=Worker.objects.get(external_id="w-a"), needs_validation=True)
    StudySession.objects.filter(study__slug="study-a").update(tasks_done=3)
    for maintained in tallies.MAINTAINED.values():  # the maintained figures of the pairs the fixture made
        tallies.check_and_rebuild(None, maintained)
    CorpusImport.objects.create(dataset=pair.dataset, source="import-a-marker", split="dev")
    TaggingJob.objects.create(dataset=pair.dataset, error="tagging-a-marker")
    return world


@pytest.mark.parametrize("role", ["other_team", Role.RESEARCHER, "superuser"])
def test_figure_pages_add_up_only_the_users_teams(client, figures, role):
    client = _client(client, figures, role)
    shown = {}
    for name, marker in FIGURE_PAGES.items():
        response = client.get(reverse(f"dashboard:{name}"))
        assert response.status_code == 200, name
        shown[name] = marker in response.content.decode()
    expected = role != "other_team"
    assert shown == dict.fromkeys(FIGURE_PAGES, expected)


def test_a_researcher_in_no_team_yet_gets_every_figure_page_empty(client, figures, django_user_model):
    """A researcher not yet in any team: each figure page and API figure route answers, with none of
    team A's data (a scope of no dataset once made the workers page fail: Django compiles such a
    query to no SQL, and the hand-written readers now answer nothing; base/subquery.py)."""
    newcomer = django_user_model.objects.create_user("r-teamless", password="pw", is_staff=True)
    newcomer.groups.add(ensure_researcher_group())
    client.force_login(newcomer)
    for name, marker in FIGURE_PAGES.items():
        response = client.get(reverse(f"dashboard:{name}"))
        assert response.status_code == 200 and marker not in response.content.decode(), name
    for name in sorted(API_FIGURE_ROUTES):
        assert client.get(reverse(name)).status_code == 200, name


def test_another_teams_dataset_is_unknown_on_figure_pages(client, figures):
    """?dataset= of another team's dataset: the page as for a slug nobody has (all of the user's
    teams' datasets, the choice marked unknown), never that dataset's figures."""
    client = _client(client, figures, "other_team")
    for name, marker in FIGURE_PAGES.items():
        response = client.get(reverse(f"dashboard:{name}"), {"dataset": "dataset-a"})
        assert marker not in response.content.decode(), name


def test_agreement_files_and_api_routes_are_of_the_users_teams(client, figures):
    csv_url = reverse("dashboard:agreement_csv", args=["per_genre"])
    routes = sorted(API_FIGURE_ROUTES)
    seen = {}
    for role in ("other_team", Role.RESEARCHER):
        client.logout()
        _client(client, figures, role)
        csv_rows = client.get(csv_url).content.decode().strip().splitlines()
        seen[role] = {"csv": csv_rows[1:]}
        for name in routes:
            response = client.get(reverse(name))
            assert response.status_code == 200, (name, role)
            seen[role][name] = response.json()
        # Another team's dataset named: 404, as a dataset nobody has.
        for name in routes:
            foreign = client.get(reverse(name), {"dataset": "dataset-a"}).status_code
            unknown = client.get(reverse(name), {"dataset": "no-such-dataset"}).status_code
            assert (foreign == 404) == (role == "other_team") and unknown == 404, name
    assert seen["other_team"]["csv"] == [] and any("fiction" in row for row in seen[Role.RESEARCHER]["csv"])
    mine, theirs = seen[Role.RESEARCHER], seen["other_team"]
    assert mine["api-agreement"]["tables"]["per_genre"] and not theirs["api-agreement"]["tables"]["per_genre"]
    assert mine["agreement-stats"]["pairs"] and not theirs["agreement-stats"]["pairs"]
    assert mine["artifacts-tags"]["untagged"] and not theirs["artifacts-tags"]["untagged"]
    assert sum(mine["artifacts-giveaway-words"]["per_label"].values()) > 0
    assert sum(theirs["artifacts-giveaway-words"]["per_label"].values()) == 0


def test_chart_images_draw_only_the_users_teams(figures):
    from dashboard import charts

    other = charts.Viewer(access.figure_teams(figures["users"]["other_team"]))
    mine = charts.Viewer(access.figure_teams(figures["users"][Role.RESEARCHER]))
    for name in ("labels", "lengths"):
        assert charts.CHARTS[name].numbers({"dataset": "dataset-a"}, other) == charts.CHARTS[name].numbers({}, other)
        assert charts.CHARTS[name].numbers({}, mine) != charts.CHARTS[name].numbers({}, other), name
    run = {"run": str(figures["run"].pk)}
    with pytest.raises(charts.NoFigure):
        charts.CHARTS["confusion"].numbers(run, other)


def test_releases_are_listed_and_served_to_their_snapshots_team_only(client, world):
    """A release is files in storage; its team is its snapshot's, named by its audit entry
    (modeling.release.release_teams). Another team's researcher neither sees it on the snapshots
    page nor downloads its files (404, as a release nobody made)."""
    from django.core.files.base import ContentFile

    from audit import services as audit
    from base.file_storage import file_storage
    from modeling.release import PUBLISHED, README

    storage = file_storage("releases")
    storage.save(f"release-a/{README}", ContentFile(b"the card of release-a"))
    audit.record(PUBLISHED, subject=world["snapshot"], team_id=world["snapshot"].team_id, after={"name": "release-a"})
    file_url = reverse("dashboard:release_file") + f"?release=release-a&path={README}"
    unknown_url = reverse("dashboard:release_file") + f"?release=release-z&path={README}"
    for role, sees in (("other_team", False), (Role.RESEARCHER, True), (Role.ANNOTATOR, True), ("superuser", True)):
        client.logout()
        _client(client, world, role)
        listed = "release-a" in client.get(reverse("dashboard:snapshots")).content.decode()
        got = client.get(file_url)
        assert listed == sees, role
        if role == Role.ANNOTATOR:
            assert got.status_code == 403  # the team's release, a role that may not export
        elif sees:
            assert got.status_code == 200 and b"".join(got.streaming_content) == b"the card of release-a"
        else:
            foreign, unknown = got, client.get(unknown_url)
            assert foreign.status_code == unknown.status_code == 404
