"""Benchmark: triage in the validation claim order, on a fresh database.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nli_x .venv/bin/python bench/triage_claims.py

A queue of BENCH_PAIRS dev pairs (one premise each, the writer's label only), a model annotator
whose label is on every pair, differing from the writer's on one pair in ten. Measured: the claim's
candidate statement (15 rows, locked) without a preference (triage off: the statement as before)
and with the triage's, and whole study claims with triage off and on; the plans of both
statements; the share of disputed pairs in the first claims. Results: bench/RESULTS-model-annotators.md.
"""

import os
import secrets
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))

import django  # noqa: E402

django.setup()

from django.db import connection, transaction  # noqa: E402
from django.utils import timezone  # noqa: E402

PAIRS = int(os.environ.get("BENCH_PAIRS", "50000"))
ROUNDS = 40
DISPUTED_EVERY = 10


def fill():
    from django.contrib.auth.models import User

    from corpus.models import Pair, Premise, Worker
    from crowd.models import Study, TaskKind
    from model_annotators.models import AnnotatorKind, ModelAnnotator, ModelLabel, PromptVersion
    from tests.validation.validation_factories import make_dataset

    dataset = make_dataset("bench")
    genre = dataset.premises.model._meta.get_field("genre").related_model.objects.get(slug="fiction")
    premises = Premise.objects.bulk_create(
        Premise(dataset=dataset, genre=genre, prompt_id=f"b{i}", text=f"premise {i}", text_hash=f"{i}", split="dev")
        for i in range(PAIRS)
    )
    pairs = Pair.objects.bulk_create(
        Pair(
            dataset=dataset,
            premise=p,
            pair_id=p.prompt_id,
            hypothesis="h",
            author_label="neutral",
            needs_validation=True,
            label_count=1,
            neutral_votes=1,
        )
        for p in premises
    )
    annotator = ModelAnnotator.objects.create(
        name="bench", dataset=dataset, kind=AnnotatorKind.ENDPOINT, base_url="http://127.0.0.1:9/v1", model_name="m"
    )
    PromptVersion.objects.create(annotator=annotator, task_kind="validation", version=1, system="s", template="t")
    ModelLabel.objects.bulk_create(
        ModelLabel(
            annotator=annotator,
            pair=pair,
            asked_with="validation-v1",
            outcome="labelled",
            label="contradiction" if index % DISPUTED_EVERY == DISPUTED_EVERY - 1 else "neutral",
        )
        for index, pair in enumerate(pairs)
    )
    study = Study.objects.create(
        slug="bench",
        name="bench",
        dataset=dataset,
        task_kind=TaskKind.VALIDATION,
        completion_code="B",
        catch_trial_share=0,
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    workers = [Worker.objects.create(user=User.objects.create(username=f"bench{i}")) for i in range(4 * ROUNDS)]
    return study, annotator, workers


def statement(worker, prefer):
    from validation import selectors

    return selectors.candidate_statement(worker, timezone.now(), limit=15, lock=True, prefer=prefer)


def run_statement(worker, prefer):
    sql, params = statement(worker, prefer)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [pk for pk, *_ in cursor.fetchall()]


def plan(worker, prefer):
    sql, params = statement(worker, prefer)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY ON) " + sql, params)
        return "\n".join(row[0] for row in cursor.fetchall())


def timed_each(function, workers):
    started = time.perf_counter()
    for worker in workers:
        function(worker)
    return (time.perf_counter() - started) / len(workers)


def main():
    from crowd.models import StudySession
    from model_annotators import services
    from model_annotators.triage import claim_preference
    from validation.batch_claims import claim_validation_batch
    from validation.models import ValidationClaim

    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        study, annotator, workers = fill()
        disputed = set(annotator.labels.exclude(label="neutral").values_list("pair_id", flat=True))
        off = timed_each(lambda w: run_statement(w, None), workers[:ROUNDS])
        services.set_model_use(study, triage_annotator=annotator)
        prefer = claim_preference(study)
        on = timed_each(lambda w: run_statement(w, prefer), workers[:ROUNDS])
        # Triage on with nothing left to triage (every disputed pair validated, or a new prompt
        # not run yet): the first part walks the whole queue and finds nothing.
        assert prefer is not None
        exhausted_prefer = (prefer[0], [annotator.pk, "validation-v9", "labelled"])
        exhausted = timed_each(lambda w: run_statement(w, exhausted_prefer), workers[:ROUNDS])
        plan_off, plan_on = plan(workers[0], None), plan(workers[0], prefer)
        plan_exhausted = plan(workers[0], exhausted_prefer)

        def claim(worker):
            session = StudySession.objects.create(study=study, worker=worker, external_session_id=f"S{worker.pk}")
            return claim_validation_batch(worker, study_session=session)

        services.set_model_use(study, triage_annotator=None)
        claim_off = timed_each(claim, workers[ROUNDS : 2 * ROUNDS])
        off_pairs = set(
            ValidationClaim.objects.filter(worker__in=workers[ROUNDS : 2 * ROUNDS]).values_list("pair_id", flat=True)
        )
        services.set_model_use(study, triage_annotator=annotator)
        claim_on = timed_each(claim, workers[2 * ROUNDS : 3 * ROUNDS])
        on_claims = ValidationClaim.objects.filter(worker__in=workers[2 * ROUNDS : 3 * ROUNDS])
        on_pairs = set(on_claims.values_list("pair_id", flat=True))
    finally:
        connection.creation.destroy_test_db(connection.settings_dict["NAME"], verbosity=0)

    print(
        f"triage in the claim order on PostgreSQL, {PAIRS} pairs, 1 in {DISPUTED_EVERY} disputed, {ROUNDS} claims each"
    )
    print(f"  candidate statement, triage off      {off * 1000:8.2f} ms")
    print(f"  candidate statement, triage on       {on * 1000:8.2f} ms")
    print(f"  candidate statement, on, none left   {exhausted * 1000:8.2f} ms")
    print(f"  study claim, triage off              {claim_off * 1000:8.2f} ms")
    print(f"  study claim, triage on               {claim_on * 1000:8.2f} ms")
    print(
        f"  disputed pairs claimed, off: {len(off_pairs & disputed)} of {len(off_pairs)}; on: {len(on_pairs & disputed)} of {len(on_pairs)}"
    )
    print("plan, triage off:\n" + plan_off)
    print("plan, triage on:\n" + plan_on)
    print("plan, triage on, none left:\n" + plan_exhausted)


if __name__ == "__main__":
    main()
