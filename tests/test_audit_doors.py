"""Every door that changes state records who did what (docs/audit.md, "Every door is in a table").

The doors are read, not listed by hand: the dashboard's views that accept POST (a view with no
method check accepts it too), the API schema's POST/PUT/PATCH/DELETE operations, and the project's
management commands. Each is in exactly one table:

- `DASHBOARD_DOORS`, `API_DOORS`, `COMMAND_DOORS`: it records the audit action named (a prefix);
  where the table says how to exercise it, the test does, as the owning team's owner with valid
  input, and looks for the entry;
- `..._EXEMPT`: it records nothing, and the reason why that is right.

A new door in neither table fails `test_every_door_is_in_a_table`.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.core.management import call_command, get_commands
from django.urls import URLPattern, get_resolver, reverse

from audit.models import AuditEntry
from teams.models import Role

Exercise = Callable[[dict[str, Any]], tuple[str, dict[str, Any]]]


@dataclass(frozen=True)
class Door:
    action: str  # the audit action it records (a prefix: "adjudication." matches each decision)
    exercise: Exercise | None = None  # world -> (url, POST data); None: listed, not exercised here


def _post(name: str, data: Callable[[dict[str, Any]], dict[str, Any]] | dict[str, Any] = {}) -> Exercise:  # noqa: B006
    def exercise(world: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        url = reverse(f"dashboard:{name}", args=world["args"].get(name, []))
        return url, data(world) if callable(data) else dict(data)

    return exercise


def _exported(world: dict[str, Any]) -> Any:
    """A snapshot of team A's dataset with its files and a train split (training refuses a snapshot
    whose files are missing or that has no train pairs)."""
    from corpus.models import Dataset, Premise
    from modeling.snapshots.services import create_snapshot, export_snapshot
    from tests import factories

    dataset = Dataset.objects.get(slug="dataset-a")
    for number, label in enumerate(("entailment", "neutral", "contradiction")):
        premise = Premise.objects.create(
            dataset=dataset,
            genre=factories.genre("fiction"),
            split="train",
            prompt_id=f"door-{number}",
            text="A cat naps.",
        )
        factories.pair(dataset, premise, [label])
    return export_snapshot(create_snapshot(world["users"][Role.OWNER], datasets=["dataset-a"]))


def _study_form(world: dict[str, Any]) -> dict[str, Any]:
    from tests.dashboard.test_study_setup import setup_post

    return setup_post(world["pair"].dataset, slug="door-study", name="door study")


def _member_post(name: str, role: str, data: dict[str, Any]) -> Exercise:
    """A POST about the team A member of `role` (the owner's own membership is the last owner's)."""

    def exercise(world: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        from teams.models import Membership

        membership = Membership.objects.get(team__slug="team-a", user=world["users"][role])
        return reverse(f"dashboard:{name}", args=["team-a", membership.pk]), dict(data)

    return exercise


DASHBOARD_DOORS = {
    "worker_exclusion": Door(
        "worker.excluded",
        _post("worker_exclusion", lambda w: {"action": "exclude", "worker": [w["worker"].pk], "reason": "guessing"}),
    ),
    "adjudicate": Door("adjudication.", _post("adjudicate", {"decision": "neutral", "reason": "looked"})),
    "adjudication_undo": Door("adjudication."),
    "mpe_adjudicate": Door("adjudication."),
    "mark_validation": Door("validation.marked", _post("mark_validation", {"dataset": "dataset-a", "share": "50"})),
    "snapshots": Door("snapshot.created", _post("snapshots", {"datasets": ["dataset-a"]})),
    "study_new": Door("study.created", _post("study_new", _study_form)),
    "privacy_erase": Door(
        "participant.erased",
        _post("privacy_erase", {"market_id": "w-a", "confirm": "w-a", "reason": "the participant asked"}),
    ),
    "study_settings": Door("study.settings"),
    # Not exercised here: registering needs an endpoint address the form accepts, and the form now
    # refuses internal ones (the loopback this suite may reach); tests/model_annotators covers it.
    "model_annotators": Door("model_annotator.registered"),
    "model_annotator_label": Door("model_annotator.job_started"),
    "model_uses": Door("model_use.changed"),
    "bonus_give": Door(
        "payment.discretionary_bonus",
        _post("bonus_give", lambda w: {"session": w["session"].pk, "amount": "1.00", "reason": "helpful notes"}),
    ),
    "bonus_pay": Door("payment."),
    "bonus_release": Door("payment."),
    "market_connection": Door("market.connection_saved"),
    "market_approve": Door("review."),
    "market_reject": Door("review."),
    "market_pay": Door("payment."),
    "market_reconcile": Door("payment."),
    "market_batch_unpaid": Door("payment.market_not_paid"),
    "pairs_bulk": Door("adjudication."),
    "pairs_bulk_undo": Door("adjudication."),
    "report_action": Door("premise.", _post("report_action", {"action": "retire"})),
    "imports": Door("import."),
    "assign_splits": Door("import."),
    "recast": Door("import.recast"),
    "snapshot_release": Door("release."),
    "training": Door("training.", _post("training", lambda w: {"snapshot": _exported(w).pk, "model": "majority"})),
    "training_cancel": Door("training.", _post("training_cancel")),
    "aggregation": Door("aggregation.", _post("aggregation", {"dataset": "dataset-a", "methods": "dawid_skene"})),
    # Recorded when a step changes something (a next target launched, a round opened): the world
    # here has no round to advance, so the door is listed, not exercised.
    "adversarial_advance": Door("adversarial."),
    "adversarial_close": Door("adversarial."),
    "team_invite": Door(
        "team.member_added",
        _post("team_invite", {"username": "door-invitee", "role": Role.RESEARCHER, "new_account": "on"}),
    ),
    "team_member_role": Door(
        "team.member_role", _member_post("team_member_role", Role.RESEARCHER, {"role": Role.ANNOTATOR})
    ),
    "team_member_remove": Door("team.member_removed", _member_post("team_member_remove", Role.ANNOTATOR, {})),
}

# Doors that accept POST and rightly record nothing.
READS_ONLY = "a page with no method check: a POST reads as a GET does, and changes nothing"
DASHBOARD_EXEMPT = {
    **dict.fromkeys(
        (
            "collection",
            "validation",
            "agreement_csv",
            "corpus",
            "workers",
            "bonuses",
            "bonus_export",
            "markets",
            "costs",
            "studies",
            "study",
            "study_sessions_csv",
            "pairs",
            "reports",
            "artifacts",
            "adjudication",
            "mpe",
            "adversarial",
            "adversarial_rounds",
            "adversarial_export",
        ),
        READS_ONLY,
    ),
    "label_pairs": "a researcher's own reference label is a label (ValidationLabel), kept with its author, "
    "not a decision about others' work; setting it as gold is recorded (gold.reference_label)",
    "market_test": "asks the market whether the credentials work; nothing is stored",
    "market_lists": "reads the market's lists of workers; nothing is stored",
    "start_tagging": "queues automatic phenomenon tagging, derived data recomputed from the pairs",
    "refresh_monitor": "recomputes the artifact monitor's figures, derived data",
    "stopping": "a what-if of the stopping rule on the page; nothing is stored",
}

API_DOORS = {
    "snapshots_create": Door("snapshot.created"),
    "training_runs_create": Door("training."),
    "training_runs_cancel_create": Door("training."),
}
NODE = (
    "a GPU node reporting on the run it leased (node token, not a researcher's decision); the run keeps its own record"
)
API_EXEMPT = {
    "worker_runs_claim_create": NODE,
    "worker_runs_progress_create": NODE,
    "worker_runs_checkpoint_update": NODE,
    "worker_runs_finish_create": NODE,
    "worker_runs_fail_create": NODE,
}

COMMAND_DOORS = {
    "grant_researcher": Door("team.member_added"),
    "move_to_team": Door("team.moved"),
    "create_team": Door("team."),
    "erase_participant": Door("participant.erased"),
    "participant_data": Door("participant.data_downloaded"),
    "retention": Door("privacy.retention_applied"),
    "import_pairs": Door("import."),
    "import_premises": Door("import."),
    "recast": Door("import.recast"),
    "mark_for_validation": Door("validation.marked"),
    "publish_snapshot": Door("snapshot."),
    "make_release": Door("release."),
    "train": Door("training."),
    "pay_market_bonuses": Door("payment."),
    "open_adversarial_round": Door("adversarial."),
    "assign_splits": Door("import."),
    "import_dnc": Door("import."),
    "import_mpe": Door("import."),
    "mark_premise_labels": Door("validation."),
}
DERIVED = "recomputes figures or rows derived from stored data by a fixed rule; no one decides anything"
READS = "reads or exports; changes nothing"
COMMAND_EXEMPT = {
    "agreement_stats": READS,
    "dashboard_figures": READS,
    "export_dnc": READS,
    "export_mpe": READS,
    "export_mpe_premise_labels": READS,
    "export_snapshot": READS,
    "genre_matrix": READS,
    "giveaway_words": READS,
    "worker_flags": READS,
    "fold_tallies": DERIVED,
    "rebuild_tallies": DERIVED,
    "rebuild_validation_credits": DERIVED,
    "recompute_gold": DERIVED,
    "tag_pairs": DERIVED,
    "refresh_monitor": DERIVED,
    "build_mpe_items": DERIVED,
    "convert_checkpoints": "rewrites stored checkpoints in the current format; their content is unchanged",
    "reap_training_runs": "the system fails runs whose node stopped reporting (a lease expired), no researcher",
    "unlock_login": "an operator's account unlock (axes), outside any team's data",
    "create_node_token": "an operator's credential for a GPU node, outside any team's data",
    "drf_create_token": "an operator's API token for a user, outside any team's data",
    "load_demo": "makes the demo's data on a fresh install",
}


def _methods(view: Any) -> list[str] | None:
    """The methods a view's require_http_methods (require_POST, require_GET) allows; None: all."""
    seen: set[int] = set()
    while view is not None and id(view) not in seen:
        seen.add(id(view))
        code = getattr(view, "__code__", None)
        if code is not None and "request_method_list" in code.co_freevars:
            return list(view.__closure__[code.co_freevars.index("request_method_list")].cell_contents)
        view = getattr(view, "__wrapped__", None)
    return None


def dashboard_post_doors() -> set[str]:
    patterns = get_resolver("dashboard.urls").url_patterns
    return {
        pattern.name
        for pattern in patterns
        if isinstance(pattern, URLPattern)
        and pattern.name
        and (_methods(pattern.callback) is None or "POST" in (_methods(pattern.callback) or []))
    }


def api_write_operations() -> set[str]:
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    return {
        operation["operationId"]
        for path in schema["paths"].values()
        for method, operation in path.items()
        if method in ("post", "put", "patch", "delete")
    }


def project_commands() -> set[str]:
    outside = ("django.", "rest_framework", "drf_spectacular", "axes")
    commands = {name for name, app in get_commands().items() if not app.startswith(outside)}
    return commands | ({"drf_create_token"} & set(get_commands()))


@pytest.mark.parametrize(
    ("found", "doors", "exempt"),
    [
        (dashboard_post_doors, DASHBOARD_DOORS, DASHBOARD_EXEMPT),
        (api_write_operations, API_DOORS, API_EXEMPT),
        (project_commands, COMMAND_DOORS, COMMAND_EXEMPT),
    ],
    ids=["dashboard", "api", "commands"],
)
def test_every_door_is_in_a_table(found, doors, exempt):
    real = found()
    assert set(doors) & set(exempt) == set(), "a door is either recorded or exempt, not both"
    assert real - set(doors) - set(exempt) == set(), "new door(s): name the audit action they record, or why none"
    assert (set(doors) | set(exempt)) - real == set(), "stale row(s): the door is gone"


EXERCISED = sorted(name for name, door in DASHBOARD_DOORS.items() if door.exercise)


@pytest.fixture
def team_a_world(django_user_model):
    """Team A's rows and users, as the access matrix makes them (tests/test_team_access.py)."""
    from tests import test_team_access

    return test_team_access.build_world(django_user_model)


@pytest.fixture
def owner_world(team_a_world, client):
    world = team_a_world
    from corpus.models import Worker
    from crowd.models import StudySession
    from modeling.models import Snapshot

    Snapshot.objects.filter(pk=world["snapshot"].pk).update(status="done")
    world["worker"] = Worker.objects.get(external_id="w-a")
    world["session"] = StudySession.objects.get(worker=world["worker"])
    client.force_login(world["users"][Role.OWNER])
    return world


@pytest.mark.django_db
@pytest.mark.parametrize("name", EXERCISED)
def test_a_dashboard_door_records_its_action(name, owner_world, client):
    door = DASHBOARD_DOORS[name]
    assert door.exercise is not None
    url, data = door.exercise(owner_world)
    before = set(AuditEntry.objects.values_list("pk", flat=True))
    response = client.post(url, data)
    assert response.status_code in (200, 302), response.content.decode()[:2000]
    made = AuditEntry.objects.exclude(pk__in=before)
    assert [entry for entry in made if entry.action.startswith(door.action)], (
        f"{name}: no {door.action!r} entry; made {[entry.action for entry in made]}"
    )
    owner = owner_world["users"][Role.OWNER]
    assert {entry.actor for entry in made if entry.action.startswith(door.action)} == {owner.username}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("operation", "url", "body"),
    [
        ("snapshots_create", "snapshot-list", lambda w: {"datasets": ["dataset-a"]}),
        pytest.param(
            "training_runs_create",
            "training-run-list",
            lambda w: {"snapshot": _exported(w).pk, "model": "majority"},
        ),
    ],
)
def test_an_api_door_records_its_action(operation, url, body, owner_world, client):
    door = API_DOORS[operation]
    before = set(AuditEntry.objects.values_list("pk", flat=True))
    response = client.post(reverse(url), body(owner_world), content_type="application/json")
    assert response.status_code in (200, 201, 202), response.content.decode()[:2000]
    made = [entry.action for entry in AuditEntry.objects.exclude(pk__in=before)]
    assert [action for action in made if action.startswith(door.action)], f"{operation}: made {made}"


@pytest.mark.django_db
def test_the_team_commands_record_their_action(owner_world, django_user_model):
    django_user_model.objects.create_user("door-newcomer")
    call_command("grant_researcher", "door-newcomer", "--team", "team-a", "--role", Role.RESEARCHER)
    assert AuditEntry.objects.filter(action=COMMAND_DOORS["grant_researcher"].action, after__user="door-newcomer")
    call_command("move_to_team", "team-b", "--study", "study-a", "--reason", "door walk")
    assert AuditEntry.objects.filter(action=COMMAND_DOORS["move_to_team"].action, reason="door walk").exists()
    call_command("create_team", "lab-c", "--name", "Lab C", "--owner", "door-founder", "--create-owner")
    from teams.models import Team

    lab_c = Team.objects.get(slug="lab-c")
    made = AuditEntry.objects.filter(action__startswith=COMMAND_DOORS["create_team"].action, team_id=lab_c.pk)
    assert set(made.values_list("action", flat=True)) == {"team.created", "team.member_added"}
