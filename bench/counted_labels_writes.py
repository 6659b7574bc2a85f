"""What the counted-label triggers (corpus migration 0038) cost the writes of labels, in the database's CPU.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nli_433_bench DEBUG=1 \\
        .venv/bin/python bench/counted_labels_writes.py [--rounds 3] [--submits 200] [--bulk 20000]

On a built corpus (e.g. `bench/crowd_pages.py`'s, whose train pairs hold one label), round after
round, with the label table's triggers enabled and disabled in turn:

- validation submits: `corpus.services.add_labels` of one label on each of 5 pairs, committed, as a
  validator's batch submit writes them (`--submits` of them, each on 5 pairs not labelled before);
- a bulk write: `add_labels` of one label on each of `--bulk` pairs in one call, as an import's or a
  large batch's insert;
- an exclusion and its lifting: `UPDATE … SET excluded` of every label of one validator and back.

Each figure is the backend's CPU (`/proc/<pid>/stat`, user + system) and the wall time, best of the
rounds, and the ratio with the triggers to without. The labels written stay (the corpus gains them);
at the end the triggers are enabled and every pair written while they were off is recounted, so the
table is as the triggers keep it. PostgreSQL must run on this machine (its backend's /proc is read).
"""

import argparse
import os
import sys
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection, transaction  # noqa: E402

from corpus.models import Label, Pair, ValidationLabel, Worker  # noqa: E402
from corpus.services import add_labels  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")
LABELS = ValidationLabel._meta.db_table
TRIGGERS = ("pair_counted_labels_added", "pair_counted_labels_edited", "pair_counted_labels_removed")
SUBMIT_PAIRS = 5


def backend_cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def set_triggers(enabled: bool) -> None:
    with connection.cursor() as cursor:
        for trigger in TRIGGERS:
            cursor.execute(f"ALTER TABLE {LABELS} {'ENABLE' if enabled else 'DISABLE'} TRIGGER {trigger}")


def measured(work: Callable[[], None], pid: int) -> tuple[float, float]:
    cpu, wall = backend_cpu(pid), time.perf_counter()
    work()
    return backend_cpu(pid) - cpu, time.perf_counter() - wall


def new_validator(name: str) -> Worker:
    user = get_user_model().objects.create_user(username=name, password=None)
    return Worker.objects.create(user=user)


def submit_all(batches: list[list[Pair]], validator: Worker) -> None:
    """Each batch's labels in a transaction of its own, committed."""
    for batch in batches:
        with transaction.atomic():
            add_labels([(pair, Label.NEUTRAL) for pair in batch], worker=validator, seconds=2.0)


def exclude_and_back(validator: Worker) -> None:
    for excluded in (True, False):
        ValidationLabel.objects.filter(worker=validator).update(excluded=excluded)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--submits", type=int, default=200)
    parser.add_argument("--bulk", type=int, default=20_000)
    args = parser.parse_args()
    if "bench" not in settings.DATABASES["default"]["NAME"]:
        sys.exit("DATABASE_URL must name a bench database: the labels written stay")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()
    per_round = args.submits * SUBMIT_PAIRS + args.bulk
    free = Pair.objects.filter(label_count=1).order_by("pk").values_list("pk", flat=True)
    fresh: Iterator[int] = iter(free[: per_round * args.rounds * 2])
    written: list[int] = []
    stamp = int(time.time())
    figures: dict[tuple[str, bool], list[tuple[float, float]]] = {}
    try:
        for round_number in range(args.rounds):
            for enabled in (True, False) if round_number % 2 == 0 else (False, True):
                set_triggers(enabled)
                validator = new_validator(f"counted-bench-{stamp}-{round_number}-{int(enabled)}")
                submits = [
                    list(Pair.objects.filter(pk__in=[next(fresh) for _ in range(SUBMIT_PAIRS)]))
                    for _ in range(args.submits)
                ]
                bulk = list(Pair.objects.filter(pk__in=[next(fresh) for _ in range(args.bulk)]))
                written += [pair.pk for batch in submits for pair in batch] + [pair.pk for pair in bulk]

                writes = (
                    ("submits", partial(submit_all, submits, validator)),
                    ("bulk", partial(submit_all, [bulk], validator)),
                    ("exclusion", partial(exclude_and_back, validator)),
                )
                for name, work in writes:
                    figures.setdefault((name, enabled), []).append(measured(work, pid))
    finally:
        set_triggers(True)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pair_counted_labels_recount(%s::bigint[])", [written])
    print(
        f"{args.rounds} rounds; {args.submits} submits of {SUBMIT_PAIRS} labels, a bulk write of {args.bulk}, an exclusion"
    )
    print(
        f"{'write':<12} {'with: cpu s':>12} {'wall s':>8} {'without: cpu s':>15} {'wall s':>8} {'cpu x':>7} {'wall x':>7}"
    )
    for name in ("submits", "bulk", "exclusion"):
        on_cpu, on_wall = (min(value[i] for value in figures[(name, True)]) for i in (0, 1))
        off_cpu, off_wall = (min(value[i] for value in figures[(name, False)]) for i in (0, 1))
        print(
            f"{name:<12} {on_cpu:>12.2f} {on_wall:>8.2f} {off_cpu:>15.2f} {off_wall:>8.2f} "
            f"{on_cpu / off_cpu:>7.2f} {on_wall / off_wall:>7.2f}"
        )


if __name__ == "__main__":
    main()
