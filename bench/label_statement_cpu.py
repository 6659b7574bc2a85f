"""The label-level file's statement against a COPY of the same label rows, in the database's CPU.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nli_433_bench DEBUG=1 \\
        .venv/bin/python bench/label_statement_cpu.py [--dataset SLUG] [--rounds 3] [--work-mem 64MB]

On a built corpus (e.g. `bench/crowd_pages.py`'s), fills the annotators' table as the export does
(`label_rows._fill_worker_facts`), then, round after round and alternated: the bench's label COPY
(`export_vs_copy.LABEL_COPY_SQL`), the export's label statement (`label_rows.label_lines_sql`,
streamed by COPY as `write_label_rows` streams it) with the server's `work_mem`, and the same with
`--work-mem`. Each figure is the backend's CPU (`/proc/<pid>/stat`, user + system) while its COPY
ran into a hash, and the wall time; best of the rounds, and each as a ratio to the label COPY.
Prints the label statement's sorts and hashes from EXPLAIN ANALYZE under each `work_mem` (whether
they spill to disk). PostgreSQL must run on this machine (its backend's /proc is read).
"""

import argparse
import hashlib
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402

from modeling.snapshots import label_rows  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


class HashSink:
    def __init__(self) -> None:
        self.hash = hashlib.sha256()

    def write(self, data: bytes) -> int:
        self.hash.update(data)
        return len(data)


def backend_cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def timed(cursor, pid: int, copy_sql: str, work_mem: str | None) -> tuple[float, float, str]:
    cursor.execute("SET work_mem = %s" if work_mem else "RESET work_mem", [work_mem] if work_mem else None)
    sink = HashSink()
    cpu, wall = backend_cpu(pid), time.perf_counter()
    cursor.copy_expert(copy_sql, sink)
    return backend_cpu(pid) - cpu, time.perf_counter() - wall, sink.hash.hexdigest()[:12]


def main() -> None:
    from export_vs_copy import LABEL_COPY_SQL

    from corpus.models import Dataset

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", help="the dataset's slug (default: the one with most pairs)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work-mem", default="64MB")
    args = parser.parse_args()
    slug = args.dataset or max(Dataset.objects.all(), key=lambda dataset: dataset.pairs.count()).slug
    with connection.cursor() as wrapper:
        cursor = wrapper.cursor
        cursor.execute("SELECT pg_backend_pid(), current_setting('work_mem')")
        pid, server_work_mem = cursor.fetchone()
        annotators = label_rows._fill_worker_facts(cursor, [slug], {}, None)
        sql, params = label_rows.label_lines_sql([slug], {}, None, annotators=annotators > 0)
        statement = cursor.mogrify(sql, params).decode()
        label_copy = cursor.mogrify(LABEL_COPY_SQL, [slug]).decode()
        runs = {
            "label COPY": (label_copy, None),
            f"label statement, work_mem {server_work_mem}": (
                f"COPY ({statement}) TO STDOUT ({label_rows.LINE_COPY_OPTIONS})",
                None,
            ),
            f"label statement, work_mem {args.work_mem}": (
                f"COPY ({statement}) TO STDOUT ({label_rows.LINE_COPY_OPTIONS})",
                args.work_mem,
            ),
        }
        print(f"dataset {slug}: {annotators} annotators; load {os.getloadavg()[0]:.2f}")
        best: dict[str, tuple[float, float]] = {}
        for round_number in range(args.rounds):
            line = []
            for name, (copy_sql, work_mem) in runs.items():
                cpu, wall, digest = timed(cursor, pid, copy_sql, work_mem)
                best[name] = (min(cpu, best.get(name, (cpu, wall))[0]), min(wall, best.get(name, (cpu, wall))[1]))
                line.append(f"{name}: {cpu:.2f} s CPU, {wall:.2f} s ({digest})")
            print(f"round {round_number + 1} (load {os.getloadavg()[0]:.2f}): " + "; ".join(line))
        base_cpu, base_wall = best["label COPY"]
        for name, (cpu, wall) in best.items():
            print(f"best {name}: {cpu:.2f} s CPU ({cpu / base_cpu:.2f}x), {wall:.2f} s wall ({wall / base_wall:.2f}x)")
        for work_mem in (None, args.work_mem):
            cursor.execute("SET work_mem = %s" if work_mem else "RESET work_mem", [work_mem] if work_mem else None)
            cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {statement}")
            plan = [row[0] for row in cursor.fetchall()]
            nodes = [text.strip() for text in plan if "Sort Method" in text or "Batches" in text or "Execution" in text]
            print(f"work_mem {work_mem or server_work_mem}: " + " | ".join(nodes))


if __name__ == "__main__":
    main()
