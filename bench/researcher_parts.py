"""The parts of the workers, bonus and approval pages this round changed, timed in one process on
bench/crowd_pages.py's corpus (build it first with bench/researcher_pages.py), each the old way and
the new way, best of --repeat, so the two compare under the same load:

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nli_crowd_bench .venv/bin/python bench/researcher_parts.py

- workers table: every worker's row summed from the tallies, sorted and paged in Python (as the
  figure cache's cold load did) / the kept table's count and page of 100 sorted in SQL;
- unpaid bonuses: every unpaid bonus of the bench's validation study as a model with its worker,
  user, session and pair / as plain rows (quality.bonus_lines);
- approval marks: the quality flags of the study's completed sessions' workers from
  `worker_quality()` over every worker / from the kept worker-flag rows.
"""

import argparse
import os
import secrets
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
if "bench" not in os.environ.get("DATABASE_URL", ""):
    os.environ["DATABASE_URL"] = "postgres://postgres@127.0.0.1:5432/nli_crowd_bench"


def best(function, repeat):
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return min(times) * 1000


def python_sorted_page(rows, key="pairs_written"):
    present = sorted((row for row in rows if row[key] is not None), key=lambda row: (row[key], row["worker"]))
    return list(reversed(present))[:100], len(rows)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    import django

    django.setup()
    from corpus.scope import Scope
    from crowd.models import Study, StudySession
    from dashboard import worker_table
    from dashboard.models import WorkerTableScope
    from quality import bonuses, flag_rows
    from quality.bonus_lines import unpaid_lines
    from quality.selectors import flag_marks

    worker_table.recompute(Scope.everything())
    flag_rows.recompute(Scope.everything())
    scope_id = WorkerTableScope.objects.get(key=Scope.everything().key).pk
    study = Study.objects.get(slug="bench-validation")
    ids = list(StudySession.objects.filter(study=study).values_list("worker_id", flat=True))
    # The study with the most unpaid bonuses (the bonus page's pay form lists every one).
    most = max(Study.objects.all(), key=lambda each: bonuses.unpaid(each).count())
    unpaid = bonuses.unpaid(most)
    parts = [
        ("workers table: Python", lambda: python_sorted_page(worker_table.worker_rows(Scope.everything()))),
        ("workers table: kept, SQL", lambda: (lambda t: (t[0:100], len(t)))(worker_table.WorkerTable(scope_id, "-pairs_written"))),
        (f"unpaid bonuses ({unpaid.count()}): models", lambda: list(unpaid.all())),
        ("unpaid bonuses: plain rows", lambda: unpaid_lines(unpaid.all())),
        (f"approval marks ({len(set(ids))} workers): worker_quality()", lambda: flag_marks(ids)),
        ("approval marks: kept rows", lambda: flag_rows.flag_marks_of(ids, Scope.everything())),
    ]  # fmt: skip
    for name, function in parts:
        print(f"{name:<52} {best(function, args.repeat):8.1f} ms")


if __name__ == "__main__":
    main()
