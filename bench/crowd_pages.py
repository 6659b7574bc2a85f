"""The researcher pages a lab opens while a study runs, on a MultiNLI-shaped corpus with a
crowd on it, cold, against the login page measured in the same run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nli_crowd_bench .venv/bin/python bench/crowd_pages.py \\
        [--pairs 433000] [--studies 12] [--repeat 3] [--slow-ms 100] [--keep] [--only workers,flagged] [--tally]

The corpus is bench/run.py's (COPY, MultiNLI's shape scaled to --pairs) with bench/worker_quality.py's
1,000 workers and bench/costs_page.py's writing and validation studies (every validation label a
submitted claim of its validator's session). On top, a crowd: --studies active
validation studies in all that serve catch trials (20% of places) from a pool of marked pairs
(`quality.services.set_reference_label`, the label page's writer), a catch bonus for each of
the first 98 matched catch answers (`quality.bonuses.record_catch_bonuses`, the submit's writer),
and the typing evidence of 1,293 written hypotheses in their writers' study sessions, a tenth of
them pasted (`authorship.services.record_writing_evidence`, the writing submit's writer).
Every other written hypothesis has its sentence row and typing record too, as
through the site (`add_written_sentences`, set-based SQL): the workers page reads them.

Printed per page (adjudication with each of its queues, workers, costs, bonuses): best of --repeat
cold requests (figure cache emptied), its ratio to the login page, its statements, the ratio of the
best of --repeat warm requests (the figure cache as the cold one left it), and EXPLAIN
ANALYZE of every statement slower than --slow-ms, once with the statistics as the build left them
and once after ANALYZE (the build ends with VACUUM ANALYZE; --stale skips it, to see a plan made on
older statistics). --only measures the pages whose name holds one of its words (and the login page);
--tally times the worker tally's rebuild, validators' batches and decisions written through the
site's writers, and a fold of the worker tally alone. Validation seconds are a crowd's
(`realistic_seconds`). Loads data into the database it is pointed at: use one of its own.
"""

import argparse
import os
import secrets
import sys
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
os.environ.setdefault("DEBUG", "1")  # the statements' times (CaptureQueriesContext)
if "bench" not in os.environ.get("DATABASE_URL", ""):
    os.environ["DATABASE_URL"] = "postgres://postgres@127.0.0.1:5432/nli_crowd_bench"

CATCH_PAIRS = 300
BONUSES = 98
TYPING_EVIDENCE = 1293


def add_studies():
    """A writing and a validation study, a session of each worker in the study of their work (the
    site's models), and a submitted claim of every validation label (set-based SQL); returns the
    number of claims. bench/costs_page.py's, with the sessions through the ORM (its raw INSERT
    names no column added since, such as the session's device)."""
    from django.db import connection

    from corpus.models import Dataset, Pair, ValidationLabel
    from crowd.models import Study, StudySession, TaskKind

    dataset = Dataset.objects.get(slug="bench")
    Study.objects.filter(slug__in=["bench-writing", "bench-validation"]).delete()
    studies = {
        kind: Study.objects.create(
            slug=f"bench-{kind.value}",
            name=f"Bench {kind.value}",
            dataset=dataset,
            task_kind=kind,
            completion_code=kind.value[:1].upper(),
            payment_per_task="0.50",
            bonus_currency="GBP",
        )
        for kind in (TaskKind.WRITING, TaskKind.VALIDATION)
    }
    validators = set(ValidationLabel.objects.filter(position__gt=1).values_list("worker_id", flat=True).distinct())
    writers = set(Pair.objects.filter(author__isnull=False).values_list("author_id", flat=True).distinct())
    for kind, workers in ((TaskKind.VALIDATION, validators), (TaskKind.WRITING, writers)):
        StudySession.objects.bulk_create(
            StudySession(study=studies[kind], worker_id=pk, external_session_id=f"bench-{kind.value}-{pk}")
            for pk in sorted(workers)
            if pk is not None
        )
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO validation_validationclaim (batch, worker_id, pair_id, is_catch_trial, study_session_id, "
            "status, created_at, expires_at, submitted_at) "
            "SELECT gen_random_uuid(), l.worker_id, l.pair_id, false, s.id, 'submitted', now(), now(), now() "
            "FROM validation_validationlabel l JOIN collection_studysession s "
            "ON s.worker_id = l.worker_id AND s.study_id = %s WHERE l.position > 1",
            [studies[TaskKind.VALIDATION].pk],
        )
        claims = cursor.rowcount
        cursor.execute(
            "UPDATE collection_studysession s SET tasks_done = c.tasks FROM (SELECT study_session_id, "
            "ceil(count(*) / 5.0) AS tasks FROM validation_validationclaim GROUP BY study_session_id) c "
            "WHERE c.study_session_id = s.id"
        )
    return claims


def add_crowd(studies):
    """The active validation studies serving catch trials, the catch pool and the bonuses."""
    from decimal import Decimal

    from django.contrib.auth.models import User

    from corpus.models import Dataset, Pair, Worker
    from crowd.models import Study, StudySession, TaskKind
    from quality.bonuses import record_catch_bonuses
    from quality.models import CatchTrialAnswer
    from quality.services import set_reference_label

    dataset = Dataset.objects.get(slug="bench")
    Study.objects.filter(slug__startswith="bench-crowd-").delete()
    Study.objects.filter(slug="bench-validation").update(catch_trial_share=0.2, bonus_per_catch_match=Decimal("0.10"))
    for index in range(studies - 1):
        Study.objects.create(
            slug=f"bench-crowd-{index}", name=f"Bench crowd {index}", dataset=dataset,
            task_kind=TaskKind.VALIDATION, completion_code=f"C{index}", payment_per_task="0.50",
            bonus_currency="GBP", catch_trial_share=0.2, bonus_per_catch_match=Decimal("0.10"),
        )  # fmt: skip
    researcher = User.objects.filter(is_superuser=True).first() or User.objects.create_superuser(
        f"bench-crowd-{time.time_ns()}", password="x"
    )
    marked = list(Pair.objects.filter(dataset=dataset, label_count=5).order_by("id")[:CATCH_PAIRS])
    for pair in marked:
        set_reference_label(
            pair, pair.gold_label if pair.gold_label != "-" else "neutral", by=researcher, is_catch_trial=True
        )
    validation = Study.objects.get(slug="bench-validation")
    sessions = list(StudySession.objects.filter(study=validation).select_related("worker", "study")[:BONUSES])
    for session, pair in zip(sessions, marked, strict=False):
        answer = CatchTrialAnswer.objects.create(
            worker=session.worker, pair=pair, study_session=session, label=pair.gold_label,
            expected=pair.gold_label, matched=True, batch=uuid.uuid4(),
        )  # fmt: skip
        record_catch_bonuses(session.worker, session, [answer])
    return Worker.objects.count()


def realistic_seconds():
    """Seconds per item as a crowd's are (bench/worker_quality.py gives every label one of 16 whole
    seconds): each validator reads at a pace of their own, 2 to 20 s an item, and each batch of
    theirs varies around it (a factor of about e^±0.4), so the worker tally's seconds histogram
    has the buckets a real crowd fills, and a few validators sit near the too-fast flag's 4 s."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT setseed(0.53)")
        cursor.execute(
            "UPDATE validation_validationlabel SET seconds = round(((2 + (worker_id * 7) %% 19)"
            " * exp(0.4 * (random() + random() + random() + random() - 2)))::numeric, 3) WHERE position > 1",
            [],
        )


def worker_tally_figures():
    """The worker tally after the build: its rebuild from the labels (the build wrote them
    around the writers), its rows, and a fold of its tables alone after validators' batches and
    researchers' decisions written through the site's writers (`corpus.services.add_labels`,
    `corpus.adjudication.adjudicate`)."""
    import random
    from unittest import mock

    from corpus import tallies, worker_tally
    from corpus.adjudication import adjudicate
    from corpus.models import Pair, Worker
    from corpus.services import LabelRefused, add_labels

    started = time.perf_counter()
    tallies.check_and_rebuild(None, worker_tally.TALLY)
    rebuilt = time.perf_counter() - started
    rows = {model.__name__: model.objects.count() for model, _ in worker_tally.TABLES}
    print(f"worker tally rebuilt from the labels in {rebuilt * 1000:.0f} ms: {rows}")
    rng = random.Random(53)
    open_pairs = list(Pair.objects.filter(label_count__lt=5).order_by("id").values_list("id", flat=True)[:2000])
    validators = list(Worker.objects.filter(labels__position__gt=1).distinct().values_list("pk", flat=True)[:200])
    started, batches = time.perf_counter(), 0
    for start in range(0, len(open_pairs), 5):
        pairs = list(Pair.objects.filter(pk__in=open_pairs[start : start + 5]))
        try:
            add_labels([(pair, rng.choice(["entailment", "neutral", "contradiction"])) for pair in pairs],
                       worker=Worker.objects.get(pk=rng.choice(validators)), seconds=rng.uniform(2, 30))  # fmt: skip
            batches += 1
        except LabelRefused:
            pass
    labelled = time.perf_counter() - started
    decided = list(Pair.objects.filter(label_count=5).order_by("id")[:200])
    for pair in decided:
        adjudicate(pair, rng.choice(["entailment", "neutral", "contradiction"]))
    deltas = {model.__name__: model.objects.count() - rows[model.__name__] for model, _ in worker_tally.TABLES}
    print(f"{batches} batches of 5 labels in {labelled:.1f} s and {len(decided)} decisions wrote delta rows {deltas}")
    with mock.patch.dict(tallies.MAINTAINED, {"worker": worker_tally.TALLY}, clear=True):
        started = time.perf_counter()
        folded = tallies.fold()
        print(f"fold of the worker tally alone: {folded} rows in {(time.perf_counter() - started) * 1000:.0f} ms")
        started = time.perf_counter()
        tallies.fold()
        print(f"fold again, nothing to fold: {(time.perf_counter() - started) * 1000:.0f} ms")


def add_written_sentences():
    """Every other written pair's sentence and typing record, by set-based SQL: a collection written
    through the site has one of each per hypothesis (the copies' table and the typing evidence),
    which the workers page reads. A copy of an earlier sentence every 25th (its group's root a few
    sentences before, its record flagged `copy` as the submit flags it), a flagged record every 10th,
    spread over the last 30 days. Returns the rows added to each table."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO authorship_writtensentence (pair_id, premise_id, dataset_id, worker_id, study_session_id,"
            " normalised, signature, own_words, created_at)"
            " SELECT p.id, p.premise_id, p.dataset_id, p.author_id, s.id, lower(left(p.hypothesis, 290)), '', '{}',"
            "        now() - (p.id % 30) * interval '1 day'"
            " FROM collection_pair p LEFT JOIN collection_studysession s"
            "   ON s.worker_id = p.author_id AND s.external_session_id = 'bench-writing-' || p.author_id"
            " WHERE p.author_id IS NOT NULL"
            "   AND NOT EXISTS (SELECT 1 FROM authorship_writtensentence w WHERE w.pair_id = p.id)"
        )
        added = cursor.rowcount
        cursor.execute(
            "UPDATE authorship_writtensentence SET copy_of_id = id - 1000, cluster_root_id = id - 1000 - id % 7,"
            " copy_similarity = 0.95 WHERE id % 25 = 0 AND id > 2000 AND copy_of_id IS NULL"
        )
        cursor.execute(
            "UPDATE authorship_writtensentence AS copy SET copies_other_writer = copied.worker_id <> copy.worker_id"
            " FROM authorship_writtensentence AS copied"
            " WHERE copied.id = copy.copy_of_id AND copy.copies_other_writer IS NULL"
        )
        cursor.execute(
            "INSERT INTO authorship_writingevidence (field_name, text_chars, has_evidence, keystrokes, deletions,"
            " typed_chars, pasted_chars, untrusted_chars, prefilled_chars, pasted_after_away_chars, away_count,"
            " away_ms, typing_ms, intervals, flags, flagged, created_at, pair_id, study_session_id, worker_id)"
            " SELECT 'entailment', 40, true, 45, 2, 40, 0, 0, 0, 0, 0, 0, 9000, 40,"
            "        CASE WHEN w.copy_of_id IS NULL THEN '[]' ELSE '[\"copy\"]' END::jsonb,"
            "        w.id % 10 = 0 OR w.copy_of_id IS NOT NULL,"
            "        w.created_at, w.pair_id, w.study_session_id, w.worker_id"
            " FROM authorship_writtensentence w"
            " WHERE NOT EXISTS (SELECT 1 FROM authorship_writingevidence e WHERE e.pair_id = w.pair_id)"
        )
    return added


def add_typing_evidence(rows=TYPING_EVIDENCE):
    """The typing evidence of the first `rows` written pairs, through the writing submit's writer:
    a page's record per writer and premise (the hypotheses written together), each typed key by key
    at a person's pace, every tenth page pasted; judged against a claim handed out two minutes
    before. Returns the rows written."""
    import json
    from datetime import timedelta
    from itertools import groupby

    from django.db import transaction
    from django.utils import timezone

    from authorship.services import ClaimClock, record_writing_evidence
    from corpus.models import Pair
    from crowd.models import StudySession

    sessions = {
        s.worker_id: s for s in StudySession.objects.filter(study__slug="bench-writing").select_related("study")
    }
    pairs = Pair.objects.filter(author__isnull=False).select_related("author").order_by("premise_id", "author_id", "pk")
    written = 0
    now = timezone.now()
    chosen = list(pairs[:rows])
    with transaction.atomic():
        for index, ((_, _), group) in enumerate(groupby(chosen, key=lambda pair: (pair.premise_id, pair.author_id))):
            page = list(group)
            pasted = index % 10 == 9
            fields = {
                pair.author_label: (
                    {"k": 2, "p": len(pair.hypothesis), "len": len(pair.hypothesis), "fk": 900}
                    if pasted
                    else {
                        "k": len(pair.hypothesis) + 4,
                        "d": 2,
                        "t": len(pair.hypothesis),
                        "fk": 3000,
                        "n": len(pair.hypothesis) + 1,
                        "m": 230.0,
                        "cv": 0.5,
                        "tt": round((len(pair.hypothesis) + 1) * 230.0),
                        "len": len(pair.hypothesis),
                    }
                )
                for pair in page
            }
            raw = json.dumps({"v": 1, "open": 120_000, "away": 0, "awayMs": 0, "fields": fields})
            clock = ClaimClock(served_at=now - timedelta(minutes=2), submitted_at=now)
            author = page[0].author
            assert author is not None  # written pairs only
            rows_made = record_writing_evidence(
                author, sessions.get(author.pk), raw, [(pair.author_label, pair) for pair in page], clock=clock
            )
            written += len(rows_made)
    return written


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=433_000)
    parser.add_argument("--studies", type=int, default=12)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--slow-ms", type=float, default=100.0)
    parser.add_argument("--keep", action="store_true", help="measure the corpus and crowd already there")
    parser.add_argument("--only", default="", help="measure only the pages whose name holds one of these (a,b)")
    parser.add_argument("--tally", action="store_true", help="the worker tally's rebuild, writes and fold")
    parser.add_argument("--stale", action="store_true", help="leave the build's statistics unanalyzed")
    parser.add_argument("--fresh-too", action="store_true", help="after measuring, ANALYZE and measure again")
    parser.add_argument(
        "--unpaid-bonuses",
        type=int,
        default=0,
        help="first bring the bonus page's study to this many unpaid bonuses (discretionary ones, over its sessions)",
    )
    parser.add_argument(
        "--in-flight",
        type=int,
        default=0,
        help="then connect that study to Prolific and put this many of its unpaid bonuses in flight "
        "(claimed and sent by the API, sent in a file, set aside: a quarter each)",
    )
    args = parser.parse_args()

    from bench.run import ensure_database, generate

    ensure_database()
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import setup_test_environment

    from bench.worker_quality import VALIDATORS, WRITERS, assign_workers

    call_command("migrate", verbosity=0)
    if not args.keep:
        with connection.cursor() as cursor:
            cursor.execute("ALTER TABLE collection_pair ALTER COLUMN held_places SET DEFAULT 0")
        seconds, labels = generate(args.pairs, VALIDATORS + WRITERS)
        assign_workers()
        realistic_seconds()
        claims = add_studies()
        workers = add_crowd(args.studies)
        typing = add_typing_evidence()
        sentences = add_written_sentences()
        from authorship import sentence_tally, typing_tally
        from collection import hypothesis_tally
        from corpus import tallies, worker_tally
        from validation import credits

        tallies.check_and_rebuild(None, hypothesis_tally.TALLY)
        tallies.check_and_rebuild(None, worker_tally.TALLY)  # the labels' workers were set around the writers
        # The sentences and typing records added by SQL, around their writers.
        tallies.check_and_rebuild(None, sentence_tally.TALLY)
        tallies.check_and_rebuild(None, typing_tally.TALLY)
        credits.rebuild()

        from corpus import tallies
        from validation import cost_tally

        tallies.check_and_rebuild(None, hypothesis_tally.TALLY)
        cost_tally.rebuild_with_credits()
        if not args.stale:
            with connection.cursor() as cursor:
                cursor.execute("VACUUM ANALYZE")
        print(f"corpus: {args.pairs} pairs, {labels} label rows, {claims} validation claims, "
              f"{workers} workers, {args.studies} studies, {typing} typing-evidence rows "
              f"(+{sentences} sentences and records by SQL); "
              f"built in {seconds:.1f} s + crowd")  # fmt: skip

    if args.tally:
        worker_tally_figures()
    if args.unpaid_bonuses:
        print(f"unpaid bonuses of the bonus page's study: {unpaid_bonuses_at_least(args.unpaid_bonuses):,}")
    if args.in_flight:
        print(f"bonuses in flight on the bonus page's study's connection: {bonuses_in_flight(args.in_flight):,}")
    setup_test_environment()
    from django.conf import settings

    settings.ALLOWED_HOSTS = ["*"]
    client = Client()
    client.force_login(User.objects.create_superuser(f"bench-crowd-{time.time_ns()}", password="x"))
    # A member of the corpus's team too (its owner): their figure readers join each row to its dataset's
    # team (teams.access), the superuser's read every team's rows without that join.
    member = Client()
    member.force_login(team_member())
    pages = researcher_pages(client, member)
    if args.only:
        wanted = args.only.split(",")
        pages = [page for page in pages if page[2] is None or any(part in page[0] for part in wanted)]
    measure(pages, args)
    if args.fresh_too:
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        print("\nafter ANALYZE (fresh statistics):")
        measure(pages, args)


def unpaid_bonuses_at_least(n):
    """The study the bonus page opens on, brought to `n` unpaid earned bonuses by discretionary ones
    over its sessions (a ledger row each, as `quality.bonuses.give_discretionary_bonus` writes them,
    in bulk): a collection whose researchers pay rarely. Returns how many it has."""
    from decimal import Decimal

    from crowd.models import StudySession
    from quality.bonuses import DISCRETIONARY_REASON, study_summaries
    from quality.models import BonusCause, BonusEntry, BonusKind

    study = study_summaries()[0]
    unpaid = BonusEntry.objects.filter(study=study, kind=BonusKind.EARNED, payment__isnull=True)
    missing = n - unpaid.count()
    sessions = list(StudySession.objects.filter(study=study, is_preview=False).values_list("pk", "worker_id"))
    if missing > 0:
        BonusEntry.objects.bulk_create(
            (
                BonusEntry(
                    kind=BonusKind.EARNED,
                    worker_id=sessions[index % len(sessions)][1],
                    study=study,
                    study_session_id=sessions[index % len(sessions)][0],
                    amount=Decimal("0.10"),
                    currency=study.bonus_currency,
                    cause=BonusCause.OTHER,
                    reason=f"{DISCRETIONARY_REASON}: bench {index}",
                )
                for index in range(missing)
            ),
            batch_size=5000,
        )
    return unpaid.count()


def bonuses_in_flight(n):
    """The bonus page's study connected to Prolific (markets.connections), with `n` of its unpaid
    bonuses held by payers, as the payment machine leaves them: claimed and sent by the API, sent
    in a downloaded file, set aside (a quarter each, oldest first). Returns how many are held."""
    from cryptography.fernet import Fernet
    from django.conf import settings
    from django.utils import timezone

    from markets import connections
    from markets.models import BonusPayment, MarketConnection, Payer, PaymentState
    from quality.bonuses import study_summaries, unpaid

    study = study_summaries()[0]
    # The bench's connection is never opened (nothing is sent): a key of its own seals its token.
    settings.MARKET_CREDENTIALS_KEY = settings.MARKET_CREDENTIALS_KEY or Fernet.generate_key().decode()
    connection = MarketConnection.objects.filter(study=study).first() or connections.save_connection(
        study, market="prolific", market_study_id="5fa0000000000000000000b1", token="bench"
    )
    held = BonusPayment.objects.filter(connection=connection)
    missing = n - held.count()
    if missing > 0:
        states = [(Payer.API, PaymentState.CLAIMED), (Payer.API, PaymentState.SENT),
                  (Payer.FILE, PaymentState.SENT), (Payer.API, PaymentState.ASIDE)]  # fmt: skip
        free = unpaid(study).filter(market_payment__isnull=True).values_list("pk", flat=True)[:missing]
        BonusPayment.objects.bulk_create(
            (
                BonusPayment(
                    earned_id=pk,
                    connection=connection,
                    payer=states[index % 4][0],
                    state=states[index % 4][1],
                    request_token=f"nli-bonus-{pk}",
                    lease_until=timezone.now(),
                )
                for index, pk in enumerate(free)
            ),
            batch_size=5000,
        )
    return held.count()


def researcher_pages(superuser, member):
    """(name, url or (url, form), logged-in client or None) of the login page (the baseline) and
    each researcher page, as the superuser and as the team's owner, and the approval CSV."""
    from validation import adjudication

    dashboard = [
        *((f"adjudication {f.slug}", f"/dashboard/adjudication/?queue={f.slug}") for f in adjudication.FILTERS),
        ("workers", "/dashboard/workers/"),
        ("costs", "/dashboard/costs/"),
        ("bonuses", "/dashboard/bonuses/"),
        ("imports", "/dashboard/imports/"),
        ("study page", "/dashboard/studies/bench-validation/"),
    ]
    pages = [("login (baseline)", "/accounts/login/", None)]
    pages += [(name, url, superuser) for name, url in dashboard]
    pages += [(f"{name} (team owner)", url, member) for name, url in dashboard]
    pages.append(("approval CSV", approval_csv(), superuser))  # the admin's action: the superuser's
    return pages


def measure(pages, args):
    """Each page cold and warm against the login page, then EXPLAIN ANALYZE of its slow statements."""
    from django.core.cache import cache
    from django.db import connection, reset_queries
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    slow = []
    baseline = None
    print(f"{'page':<40} {'best ms':>9} {'x login':>8} {'statements':>10} {'warm x':>8}")
    for name, url, logged_in in pages:
        browser = logged_in or Client()
        times = []
        for _ in range(args.repeat):
            cache.clear()
            reset_queries()  # a request resets the log: counted from an empty one
            with CaptureQueriesContext(connection) as captured:
                started = time.perf_counter()
                response = request(browser, url)
                times.append(time.perf_counter() - started)
            assert response.status_code == 200, (url, response.status_code)
        best = min(times)
        # Kept now: a later request resets the connection's log the capture reads.
        cold_queries = list(captured.captured_queries)
        statements = len(cold_queries)
        warm_times = []
        for _ in range(args.repeat):  # warm: the figure cache as the cold request left it, best of --repeat
            started = time.perf_counter()
            request(browser, url)
            warm_times.append(time.perf_counter() - started)
        warm = min(warm_times)
        baseline = baseline or best
        print(f"{name:<40} {best * 1000:9.1f} {best / baseline:8.1f} {statements:10d} {warm / baseline:8.1f}")
        slow += [
            (name, q["sql"], float(q["time"]))
            for q in cold_queries
            # Reads only: EXPLAIN ANALYZE runs the statement (a write of kept rows would be written twice).
            if float(q["time"]) * 1000 > args.slow_ms and q["sql"].lstrip().upper().startswith(("SELECT", "WITH"))
        ]
    seen = set()
    for name, sql, seconds in slow:
        if sql in seen:
            continue
        seen.add(sql)
        print(f"\n--- {name}: {seconds * 1000:.0f} ms\n{sql[:600]}")
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {sql}")
            print("\n".join(row[0] for row in cursor.fetchall()))


def request(browser, url, **extra):
    """GET a page, or POST a form (url, data): the approval CSV is an admin action."""
    if isinstance(url, tuple):
        return browser.post(url[0], url[1], **extra)
    return browser.get(url, **extra)


def approval_csv():
    """The approval list of the validation study's completed sessions (the admin's CSV action, whose
    worker marks name the quality flags); the bench's sessions are marked completed first."""
    from django.db.models import F

    from crowd.models import Study, StudySession

    study = Study.objects.get(slug="bench-validation")
    StudySession.objects.filter(study=study, completed_at__isnull=True).update(completed_at=F("started_at"))
    return ("/admin/crowd/study/", {"action": "export_completions", "_selected_action": [study.pk]})


def team_member():
    """A member of the bench dataset's team (its owner: the role that also pays), not a superuser."""
    from django.contrib.auth.models import User

    from base.permissions import ensure_researcher_group
    from corpus.models import Dataset
    from crowd.models import Study
    from teams.models import Role, default_team
    from teams.services import join

    dataset = Dataset.objects.get(slug="bench")
    if dataset.team_id is None:
        dataset.team = default_team()
        dataset.save(update_fields=["team"])
    # The bench's studies were made in no team: the team's researcher sees them once they are its.
    Study.objects.filter(dataset=dataset, team__isnull=True).update(team=dataset.team)
    user = User.objects.create_user(f"bench-member-{time.time_ns()}", password="x", is_staff=True)
    user.groups.add(ensure_researcher_group())
    join(user, dataset.team, Role.OWNER)  # the owner: the bonus page is the money role's
    return user


if __name__ == "__main__":
    main()
