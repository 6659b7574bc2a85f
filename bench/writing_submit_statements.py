"""What one writing submit costs on a built corpus: its statements and its time, in one process.

    DEBUG=1 DATABASE_URL=postgres://postgres@127.0.0.1:5432/nli_433_bench NLI_DEFAULT_DATASET=bench \\
        .venv/bin/python bench/writing_submit_statements.py [--submits 60] [--rounds 2]

Runs on a database built already (the 433k crowd of `bench/crowd_pages.py`, whose writers have
written SNLI-like sentences for a while) and writes to it: each submit is a fresh participant's,
who claims the next line of the default dataset and submits three of SNLI dev's real hypotheses
(a writing round of `bench/copy_check.py`'s replay, from its `--skip` on; a round the writing
rules refuse is passed over), so the copy check looks
up sentences that have near-copies as often as real writers' do. DEBUG must be on for the
statements' own times. Prints, per round, the submits' median and p90 wall time, the median count
of statements, and the statements that took most of the time, by their first words.
"""

import argparse
import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--submits", type=int, default=60, help="submits a round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--skip", type=int, default=0, help="SNLI dev writings to start after")
    args = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.exceptions import ValidationError
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from bench.copy_check import snli_writings
    from collection.services import submit_hypotheses
    from collection.writing_claims import claim_next_premise
    from corpus.models import Worker

    assert settings.DEBUG, "DEBUG=1: the statements' times are kept only with DEBUG on"
    labels = ("entailment", "neutral", "contradiction")
    writings = iter([texts for texts in snli_writings()[args.skip :] if all(label in texts for label in labels)])
    nonce = time.time_ns() % 10**9
    for round_number in range(args.rounds):
        seconds: list[float] = []
        counts: list[int] = []
        by_kind: dict[str, float] = defaultdict(float)
        for n in range(args.submits):
            user = get_user_model().objects.create(username=f"submit-bench-{nonce}-{round_number}-{n}")
            worker = Worker.objects.create(user=user)
            claim = claim_next_premise(worker)
            assert claim is not None, "no line left to claim"
            while True:
                texts = next(writings)
                with CaptureQueriesContext(connection) as statements:
                    started = time.perf_counter()
                    try:
                        submit_hypotheses(worker, claim.token, *(texts[label] for label in labels))
                    except ValidationError:
                        continue  # an SNLI hypothesis the writing rules refuse (too short, no verb): the next
                    seconds.append(time.perf_counter() - started)
                break
            counts.append(len(statements.captured_queries))
            for query in statements.captured_queries:
                by_kind[" ".join(query["sql"].split()[:4])[:70]] += float(query["time"])
        seconds.sort()
        print(
            f"round {round_number + 1}: {args.submits} submits, median {statistics.median(seconds) * 1000:.1f} ms, "
            f"p90 {seconds[int(len(seconds) * 0.9) - 1] * 1000:.1f} ms, statements median {statistics.median(counts):.0f} "
            f"(min {min(counts)}, max {max(counts)}); load {os.getloadavg()[0]:.2f}"
        )
        for kind, total in sorted(by_kind.items(), key=lambda item: -item[1])[:6]:
            print(f"    {total / args.submits * 1000:6.2f} ms a submit  {kind}")


if __name__ == "__main__":
    main()
