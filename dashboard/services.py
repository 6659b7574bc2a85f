"""Researcher writes started from the admin or the dashboard: holding premises, marking pairs,
excluding workers, making snapshots and launching training runs.

Each function is one transaction; views and admin actions only call them and report back.
"""
import importlib
import json
from dataclasses import dataclass

from django.db import transaction

from collection.models import Pair, Premise, PremiseReport, PremiseStatus, Worker


@transaction.atomic
def hold_premises(premises):
    """No new writing tasks for these premises until a researcher releases them."""
    return Premise.objects.filter(pk__in=premises.values("pk")).exclude(status=PremiseStatus.HELD).update(
        status=PremiseStatus.HELD
    )


@transaction.atomic
def release_premises(premises):
    """Back into the writing pool; their open reports count as dealt with. Returns (released, resolved)."""
    ids = list(premises.values_list("pk", flat=True))
    released = Premise.objects.filter(pk__in=ids, status=PremiseStatus.HELD).update(status=PremiseStatus.AVAILABLE)
    resolved = PremiseReport.objects.filter(premise_id__in=ids, resolved=False).update(resolved=True)
    return released, resolved


@transaction.atomic
def set_needs_validation(pairs, needs_validation):
    return Pair.objects.filter(pk__in=pairs.values("pk")).exclude(needs_validation=needs_validation).update(
        needs_validation=needs_validation
    )


@dataclass
class ExclusionOutcome:
    changed: int
    recomputed: bool
    recompute_report: object = None


def find_recompute_gold():
    """The gold-label recompute of the validation app, wherever it lives (None while it does not exist)."""
    for module_name in ("validation.recompute", "validation.services"):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        function = getattr(module, "recompute_gold", None)
        if callable(function):
            return function
    return None


def set_workers_excluded(workers, excluded):
    """Exclude (or include again) workers' labels; gold labels follow through a recompute.

    The flag and the recompute are separate transactions on purpose: the recompute reads every
    label, and the flag must stand even if a researcher has to rerun the recompute later.
    """
    with transaction.atomic():
        changed = Worker.objects.filter(pk__in=workers.values("pk")).exclude(is_excluded=excluded).update(
            is_excluded=excluded
        )
    if not changed:
        return ExclusionOutcome(changed=0, recomputed=False)
    recompute_gold = find_recompute_gold()
    if recompute_gold is None:
        return ExclusionOutcome(changed=changed, recomputed=False)
    return ExclusionOutcome(changed=changed, recomputed=True, recompute_report=recompute_gold())


# --- snapshots and training -------------------------------------------------------------------

class DashboardInputError(ValueError):
    """Input a researcher can fix; the message says how."""


def start_snapshot(user, dataset_slugs, filters=None):
    """Make a snapshot and queue its export. The export runs in-process in embedded mode.

    Bad datasets or filters raise django's ValidationError naming each field (nothing is made).
    """
    from modeling.snapshots.services import create_snapshot, start_export

    with transaction.atomic():
        snapshot = create_snapshot(user, datasets=list(dataset_slugs) or None, filters=filters)
        # Queued on commit, so a fast worker never looks for a row it cannot see yet.
        start_export(snapshot)
    return snapshot


def parse_options(text):
    """The training options box: a JSON object, or empty for the model's defaults."""
    text = (text or "").strip()
    if not text:
        return {}
    try:
        options = json.loads(text)
    except json.JSONDecodeError as error:
        raise DashboardInputError(f"Options are not valid JSON: {error.msg} (line {error.lineno}, column {error.colno}).")
    if not isinstance(options, dict):
        raise DashboardInputError('Options must be a JSON object, e.g. {"epochs": 2}.')
    return options


def start_training_run(user, snapshot, model, options_text):
    from modeling.training.services import launch_training_run

    config = parse_options(options_text)
    return launch_training_run(snapshot, model, config, user)
