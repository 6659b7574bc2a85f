"""Render time of every dashboard page with SNLI dev imported (run by hand, ideally on PostgreSQL).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nli_bench .venv/bin/python bench/dashboard.py [--repeat 7]
        [--copies N]   also copy SNLI dev's pairs and labels N more times (SQL INSERT ... SELECT), to see
                       how the pages grow with the corpus (N=49 gives ~500k pairs)

Each page is requested `repeat` times with the cache emptied before every request ("cold": the
aggregates really run) and `repeat` times with the cache kept ("warm": what a researcher gets
within DASHBOARD_CACHE_SECONDS). Printed: the median milliseconds and the ratio against a
baseline measured in the same run, the login page (a template render with no aggregates).
Loads data into the database it is pointed at; use a database of its own.
"""

import argparse
import os
import secrets
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
# DEBUG stays off as in production (no query log): a throwaway key of the run's own.
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.core.cache import cache  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402

SNLI_DEV = Path(os.environ.get("NLI_SHARED_DATA", ROOT.parent / "shared" / "data")) / "snli_1.0_dev.jsonl"
PAGES = [
    ("collection", "/dashboard/?dataset=snli"),
    ("collection (all)", "/dashboard/"),
    ("validation", "/dashboard/validation/?dataset=snli"),
    ("validation (all)", "/dashboard/validation/"),
    ("corpus", "/dashboard/corpus/?dataset=snli"),
    ("corpus (all)", "/dashboard/corpus/"),
    ("workers", "/dashboard/workers/"),
    ("snapshots", "/dashboard/snapshots/"),
    ("training", "/dashboard/training/"),
    ("admin: pairs", "/admin/collection/pair/"),
    ("admin: pairs, gold -", "/admin/collection/pair/?gold_label=-"),
    ("admin: pair search", "/admin/collection/pair/?q=dog"),
    ("admin: labels", "/admin/validation/validationlabel/"),
    ("admin: premises", "/admin/collection/premise/"),
]


def load(copies):
    from corpus.models import Dataset, Pair

    call_command("migrate", verbosity=0)
    if not Dataset.objects.filter(slug="snli").exists():
        if not SNLI_DEV.exists():
            sys.exit(f"{SNLI_DEV} is not here (public data lives in ../shared/data)")
        call_command("import_pairs", str(SNLI_DEV), "--dataset", "snli", "--no-progress")
    for n in range(1, copies + 1):
        slug = f"snli-copy-{n}"
        if Dataset.objects.filter(slug=slug).exists():
            continue
        copy_dataset("snli", slug)
    return Pair.objects.count()


def copy_dataset(source_slug, slug):
    """premises, pairs and labels of one dataset copied under another slug, set-based in SQL."""
    from corpus.models import Dataset, Pair, Premise, ValidationLabel

    source = Dataset.objects.get(slug=source_slug)
    with transaction.atomic():
        target = Dataset.objects.create(slug=slug, name=slug, is_imported=True)
        premise, pair, label = Premise._meta.db_table, Pair._meta.db_table, ValidationLabel._meta.db_table
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {premise} (dataset_id, genre_id, prompt_id, text, text_hash, parse, binary_parse, split,"
                " status, writings_done, source, created_at)"
                f" SELECT %s, genre_id, prompt_id, text, text_hash, parse, binary_parse, split, status, writings_done,"
                f" source, created_at FROM {premise} WHERE dataset_id = %s",
                [target.pk, source.pk],
            )
            cursor.execute(
                f"INSERT INTO {pair} (dataset_id, premise_id, pair_id, hypothesis, parse, binary_parse, author_label,"
                " author_id, writing_claim_id, created_at, needs_validation, label_count, entailment_votes,"
                " neutral_votes, contradiction_votes, gold_label)"
                f" SELECT %s, np.id, p.pair_id, p.hypothesis, p.parse, p.binary_parse, p.author_label, p.author_id,"
                " NULL, p.created_at, p.needs_validation, p.label_count, p.entailment_votes, p.neutral_votes,"
                " p.contradiction_votes, p.gold_label"
                f" FROM {pair} p JOIN {premise} op ON op.id = p.premise_id"
                f" JOIN {premise} np ON np.dataset_id = %s AND np.prompt_id = op.prompt_id"
                " WHERE p.dataset_id = %s",
                [target.pk, target.pk, source.pk],
            )
            cursor.execute(
                f"INSERT INTO {label} (pair_id, worker_id, position, label, seconds, created_at)"
                f" SELECT np.id, l.worker_id, l.position, l.label, l.seconds, l.created_at FROM {label} l"
                f" JOIN {pair} op ON op.id = l.pair_id"
                f" JOIN {pair} np ON np.dataset_id = %s AND np.pair_id = op.pair_id"
                " WHERE op.dataset_id = %s",
                [target.pk, source.pk],
            )
    print(f"  copied {source_slug} -> {slug}", flush=True)


def timed(client, url, repeat, cold):
    times = []
    for _ in range(repeat):
        if cold:
            cache.clear()
        started = time.perf_counter()
        response = client.get(url)
        elapsed = time.perf_counter() - started
        if response.status_code != 200:
            sys.exit(f"{url} answered {response.status_code}")
        times.append(elapsed * 1000)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--copies", type=int, default=0)
    args = parser.parse_args()

    setup_test_environment()  # the test client's template signals; nothing else changes
    settings.ALLOWED_HOSTS = ["testserver"]
    pairs = load(args.copies)
    from django.contrib.auth import get_user_model

    user, _ = get_user_model().objects.get_or_create(
        username="bench-researcher", defaults={"is_staff": True, "is_superuser": True}
    )
    client = Client()
    client.force_login(user)
    anonymous = Client()
    for _name, url in PAGES:  # warm up: imports, matplotlib, template loading
        client.get(url)
    anonymous.get("/accounts/login/")

    baseline = timed(anonymous, "/accounts/login/", args.repeat, cold=True)
    print(
        f"database: {connection.settings_dict['NAME']}, pairs: {pairs:,}, repeat: {args.repeat}, "
        f"cache: {getattr(settings, 'DASHBOARD_CACHE_SECONDS', 5)} s"
    )
    print(f"baseline (login page): {baseline:.1f} ms")
    print(f"{'page':<22}{'cold ms':>10}{'x base':>9}{'warm ms':>10}{'x base':>9}")
    for name, url in PAGES:
        cold = timed(client, url, args.repeat, cold=True)
        warm = timed(client, url, args.repeat, cold=False)
        print(f"{name:<22}{cold:>10.1f}{cold / baseline:>9.1f}{warm:>10.1f}{warm / baseline:>9.1f}", flush=True)


if __name__ == "__main__":
    main()
