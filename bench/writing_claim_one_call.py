"""A hand-written prototype of the writing claim as one call of a database function, against the
claim as it is made (now one call too, `collection.writing_claims._claim_statement`, for every shape
of pool) and a one-row SELECT ... FOR UPDATE transaction: what the general function costs over the
narrowest one.

    DEBUG=0 SECRET_KEY=... ALLOWED_HOSTS=localhost \\
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python bench/writing_claim_one_call.py [--premises 30000] [--claims 300] [--rounds 2]

Builds the corpus of `bench/writing_claims_scale.py` (a balanced study pooling MultiNLI's five
training genres, fiction written out) in a throwaway database and adds `bench_claim_writing`, a
PL/pgSQL function that makes the whole claim of that study in one call: the worker's stale claims
marked expired, the team's exclusion, their own open claim, the study's genres in its balanced
order (claims served so far, ties by the study's seed), and in each genre the candidate lock, the
recount of its room under the lock (a statement of its own, so a fresh snapshot), the insert, the
claim order's `claims_made` and the study's served count. Its statements are static, so PostgreSQL
keeps their plans for the connection: no parse and no planning after the first calls.

The function is the balanced-by-genre study's case only (no import-file pool, no random order, no
second look that waits for a locked candidate): enough to learn what one call costs, not a claim
path. Each round measures the three alternately with `bench/writing_claims_scale.py`'s forked
claimers (4 processes, best of 3 runs of `--claims`), fresh participants for every claim.
"""

import argparse
import hashlib
import os
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

ONE_CALL_FUNCTION = """
CREATE FUNCTION bench_claim_writing(
    p_worker bigint, p_session bigint, p_study bigint, p_dataset bigint, p_seed bigint,
    p_now timestamptz, p_expires timestamptz, p_token uuid, p_shard int
) RETURNS SETOF collection_writingclaim LANGUAGE plpgsql AS $$
DECLARE
    v_team bigint;
    v_wanted int;
    v_genre bigint;
    v_premise bigint;
    v_claim collection_writingclaim;
    v_tried bigint[] := '{}';
BEGIN
    SELECT d.team_id, d.writings_per_premise INTO v_team, v_wanted FROM collection_dataset d WHERE d.id = p_dataset;
    UPDATE collection_writingclaim SET status = 'expired'
        WHERE worker_id = p_worker AND status = 'open' AND expires_at <= p_now;
    IF EXISTS (SELECT 1 FROM corpus_workerexclusion x WHERE x.worker_id = p_worker AND x.team_id = v_team) THEN
        RAISE EXCEPTION 'excluded' USING ERRCODE = 'P0001';
    END IF;
    SELECT * INTO v_claim FROM collection_writingclaim c
        WHERE c.worker_id = p_worker AND c.status = 'open' AND c.expires_at > p_now;
    IF FOUND THEN
        RETURN NEXT v_claim;
        RETURN;
    END IF;
    FOR v_genre IN
        SELECT g.genre_id FROM collection_study_pool_genres g
        LEFT JOIN (SELECT s.genre_id, SUM(s.claims) AS n FROM collection_studyserved s
                   WHERE s.study_id = p_study GROUP BY s.genre_id) served ON served.genre_id = g.genre_id
        WHERE g.study_id = p_study
        ORDER BY COALESCE(served.n, 0), (g.genre_id * 2654435761 + p_seed) % 4294967291
    LOOP
        LOOP
            v_premise := NULL;
            SELECT o.premise_id INTO v_premise FROM collection_premise_claim_order o
                WHERE o.claimable AND o.dataset_id = p_dataset AND o.genre_id = v_genre AND o.writings_done < v_wanted
                AND NOT (o.premise_id = ANY (v_tried))
                AND NOT (o.premise_id IN (SELECT w.premise_id FROM collection_writingclaim w WHERE w.worker_id = p_worker))
                AND o.writings_done + (SELECT COUNT(*) FROM collection_writingclaim c WHERE c.premise_id = o.premise_id
                                       AND c.status = 'open' AND c.expires_at > p_now) < v_wanted
                ORDER BY o.writings_done, o.claims_made, o.premise_id
                LIMIT 1 FOR NO KEY UPDATE OF o SKIP LOCKED;
            EXIT WHEN v_premise IS NULL;
            INSERT INTO collection_writingclaim
                (study_session_id, status, created_at, expires_at, submitted_at, take_backs, token, worker_id, premise_id)
                SELECT p_session, 'open', p_now, p_expires, NULL, 0, p_token, p_worker, p.id FROM collection_premise p
                WHERE p.id = v_premise AND p.status = 'available'
                AND p.writings_done + (SELECT COUNT(*) FROM collection_writingclaim c WHERE c.premise_id = p.id
                                       AND c.status = 'open' AND c.expires_at > p_now) < v_wanted
                RETURNING * INTO v_claim;
            IF v_claim.id IS NOT NULL THEN
                UPDATE collection_premise_claim_order SET claims_made = claims_made + 1 WHERE premise_id = v_premise;
                INSERT INTO collection_studyserved AS s (study_id, genre_id, source, shard, claims)
                    SELECT p_study, p.genre_id, p.source, p_shard, 1 FROM collection_premise p WHERE p.id = v_premise
                    ON CONFLICT (study_id, genre_id, source, shard) DO UPDATE SET claims = s.claims + 1;
                RETURN NEXT v_claim;
                RETURN;
            END IF;
            v_tried := v_tried || v_premise;
            IF cardinality(v_tried) >= 20 THEN
                RETURN;
            END IF;
        END LOOP;
    END LOOP;
END $$;
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--premises", type=int, default=30000)
    parser.add_argument("--claims", type=int, default=300, help="claims a run (each a fresh participant)")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()

    from bench.throwaway_database import run_with_django

    def body() -> None:
        import random

        from django.db import connection, transaction
        from django.utils import timezone

        from bench.writing_claims_scale import build, load, run_processes
        from collection.models import StudyServed, WritingClaim
        from collection.writing_claims import WRITING_CLAIMS, _claim_of, _columns_of, claim_next_premise
        from corpus.models import Worker
        from crowd.models import StudySession

        dataset, study, _ = build(args.premises)
        with connection.cursor() as cursor:
            cursor.execute(ONE_CALL_FUNCTION)
            cursor.execute("ANALYZE")
        seed = int(hashlib.sha256(f"{study.pk}:{study.code_secret}".encode()).hexdigest()[:8], 16)
        study = type(study).objects.select_related("dataset").get(pk=study.pk)
        from django.contrib.auth.models import User

        # Every claim is a fresh participant's: 6 runs of `--claims` a round, and the warm-up's two.
        wanted = (args.rounds * 6 + 2) * args.claims - Worker.objects.count()
        if wanted > 0:
            users = User.objects.bulk_create(User(username=f"one-call-{i}") for i in range(wanted))
            Worker.objects.bulk_create(Worker(user=user) for user in users)
        workers = iter(list(Worker.objects.order_by("pk")))
        rng = random.Random(76)

        def one_row_for_update(pk: int) -> None:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SELECT id FROM collection_premise WHERE id = %s FOR UPDATE", [pk])
                cursor.fetchone()

        def as_now(session: StudySession) -> None:
            claim_next_premise(session.worker, study_session=session)

        def one_call(session: StudySession) -> None:
            now = timezone.now()
            with connection.cursor() as cursor:
                cursor.execute(
                    f"SELECT {_columns_of('c')} FROM bench_claim_writing(%s, %s, %s, %s, %s, %s, %s, %s, %s) c",
                    [
                        session.worker_id,
                        session.pk,
                        study.pk,
                        dataset.pk,
                        seed,
                        now,
                        WRITING_CLAIMS.expiry(now, study),
                        uuid.uuid4(),
                        session.worker_id % StudyServed.SHARDS,
                    ],
                )
                row = cursor.fetchone()
            assert row is not None, "no claim"
            _claim_of(row)

        def best_rate(function: Callable[[Any], None], items_of: Callable[[], list[Any]]) -> tuple[float, int]:
            best, errors = 0.0, 0
            for _ in range(3):
                calls, seconds, _, failed = run_processes(4, items_of(), function)
                best, errors = max(best, calls / seconds), errors + len(failed)
            return best, errors

        def sessions() -> list[StudySession]:
            batch = StudySession.objects.bulk_create(
                StudySession(study=study, worker=next(workers), external_session_id="bench") for _ in range(args.claims)
            )
            for session in batch:
                session.study = study
            return batch

        # As a web server's worker has served claims before: whatever a process does once (its first
        # connection's catalogue reads, a statement's function looked up) is done before the fork.
        for function in (as_now, one_call):
            function(sessions()[0])

        for round_number in range(args.rounds):
            base, _ = best_rate(
                one_row_for_update, lambda: [rng.randrange(1, args.premises) for _ in range(args.claims)]
            )
            now_rate, now_errors = best_rate(as_now, sessions)
            one_rate, one_errors = best_rate(one_call, sessions)
            print(
                f"round {round_number + 1}: one-row FOR UPDATE {base:,.0f}/s; claim as now {now_rate:,.0f}/s = "
                f"{now_rate / base:.2f}x ({now_errors} errors); one call {one_rate:,.0f}/s = {one_rate / base:.2f}x "
                f"({one_errors} errors)  {load()}",
                flush=True,
            )
        from django.db.models import Count, Max

        claims = WritingClaim.objects.filter(study_session__study=study)
        most = claims.values("premise").annotate(n=Count("id")).aggregate(most=Max("n"))["most"]
        print(
            f"claims made: {claims.count():,}, on {claims.values('premise').distinct().count():,} premises "
            f"(at most {most} a premise; writings_per_premise {dataset.writings_per_premise}), "
            f"from fiction (written out): {claims.filter(premise__genre__slug='fiction').count()}"
        )

    run_with_django("writing_claim_one_call", body)


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
    main()
