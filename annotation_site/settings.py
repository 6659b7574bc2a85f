"""Settings for the NLI annotation platform, all from environment variables. With none set, the
platform runs embedded: the PostgreSQL cluster in var/postgres/ (scripts/with_database.py starts
it) and Celery tasks executed in-process.
"""

import os
from pathlib import Path
from typing import Any, NotRequired, TypedDict
from urllib.parse import quote

import dj_database_url
import django_stubs_ext
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

# Lets typed code write admin.ModelAdmin[Study], QuerySet[Pair] at runtime (mypy reads them: pyproject.toml).
django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if not value:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


# Off unless asked for: `make demo`/`make serve` and the tests (annotation_site/test_settings.py) ask.
DEBUG = env_bool("DEBUG", default=False)
# Example keys from .env.example and the old default: never accepted with DEBUG off.
_EXAMPLE_SECRET_KEYS = {"change-me-to-a-long-random-string", "embedded-development-key-not-for-production", "change-me"}
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not DEBUG and (
    not SECRET_KEY
    or len(SECRET_KEY) < 50
    or SECRET_KEY in _EXAMPLE_SECRET_KEYS
    or len(set(SECRET_KEY)) < 5
    or SECRET_KEY.startswith("django-insecure-")
):
    raise ImproperlyConfigured(
        "With DEBUG off, SECRET_KEY must be set to a long random value (50 characters or more, not the example): "
        "python -c 'import secrets; print(secrets.token_urlsafe(50))'. "
        "On a workstation, ask for DEBUG instead: DEBUG=1 .venv/bin/python manage.py ... (the make targets do)"
    )
if not SECRET_KEY:
    SECRET_KEY = "embedded-development-key-not-for-production"
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

# HTTPS. Off by default (the embedded mode serves plain http on 127.0.0.1); docker-compose.yml
# turns them on behind its TLS reverse proxy.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT")
SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "0"))
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS")
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD")
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE")
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE")
# Only behind a proxy that sets X-Forwarded-Proto itself (and drops the client's).
if env_bool("SECURE_PROXY_SSL_HEADER"):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

# Content security policy (django-csp): scripts and styles from this site only, no inline scripts;
# inline style attributes stay allowed for progress bars. Forms may post back to MTurk only.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF, "'unsafe-inline'"],
        "img-src": [SELF, "data:"],
        "font-src": [SELF, "data:"],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "frame-ancestors": [NONE],
        "form-action": [SELF, "https://www.mturk.com", "https://workersandbox.mturk.com"],
    }
}

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "csp",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    # Lowest layer first: the core, the crowd, the judgement floor, the feature apps, then what
    # sits on top of them (docs/architecture.md).
    "base.apps.BaseConfig",
    "teams",
    "audit",
    "corpus",
    "crowd",
    "consent",
    "quality",
    "artifacts",
    "authorship",
    "collection",
    "validation",
    "importers",
    "modeling",
    "adversarial",
    "markets",
    "model_annotators",
    "privacy",
    "dashboard",
    "demo",
    # The composition root, last: its ready() registers the task apps into the layers beneath them.
    "annotation_site.apps.SiteConfig",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Static files from the application itself (gunicorn serves nothing, the proxy only proxies):
    # answered here, before sessions or the database are touched (docs/deployment.md).
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "base.middleware.LoginThrottleMiddleware",
    "base.middleware.FailedTokenThrottleMiddleware",
    "base.middleware.BadInputMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "crowd.middleware.SavedDraftsMiddleware",
    "crowd.middleware.BrowserDeviceMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "base.middleware.ResearcherOnlyAdminMiddleware",
    "crowd.middleware.PreviewMiddleware",
]

ROOT_URLCONF = "annotation_site.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "crowd.context_processors.saved_drafts",
                "crowd.context_processors.preview",
                "consent.context_processors.withdraw_link",
            ],
        },
    },
]

WSGI_APPLICATION = "annotation_site.wsgi.application"

# PostgreSQL is the platform's one database (docs/deployment.md). Without DATABASE_URL: the embedded
# cluster in var/postgres/ that `make demo` and `make test` start (scripts/with_database.py), so a
# command run beside one (`manage.py shell` next to `make demo`) finds it.
EMBEDDED_DATABASE_URL = f"postgres://postgres@{quote(str(BASE_DIR / 'var' / 'postgres'), safe='')}/nli"
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or EMBEDDED_DATABASE_URL,
        conn_max_age=int(os.environ.get("DATABASE_CONN_MAX_AGE", "60")),
    )
}
if DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
    raise ImproperlyConfigured(
        f"DATABASE_URL must name a PostgreSQL database (postgres://user:password@host:port/name), not "
        f"{DATABASES['default']['ENGINE']!r}: PostgreSQL is the platform's only database. Leave DATABASE_URL "
        "unset to use the embedded cluster that `make demo` and `make test` start (docs/deployment.md)."
    )
if not env_bool("DATABASE_JIT"):
    # The platform's statements are short index walks whose estimated cost grows with the tables
    # while their run time does not: JIT compiling cost many times the statement itself
    # (bench/RESULTS-docstrings.md). DATABASE_JIT=1 turns it back on.
    DATABASES["default"].setdefault("OPTIONS", {})
    DATABASES["default"]["OPTIONS"]["options"] = "-c jit=off"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# A researcher's account is read with their permissions and team roles in one statement
# (teams.backends); participants are signed in with ModelBackend (crowd.views), listed for their sessions.
AUTHENTICATION_BACKENDS = ["teams.backends.MemberBackend", "django.contrib.auth.backends.ModelBackend"]

AUTH_PASSWORD_VALIDATORS = [{"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"}]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", BASE_DIR / "var" / "static"))
STATICFILES_DIRS = [BASE_DIR / "static"]
# Static files (WhiteNoise, docs/deployment.md). STATIC_MANIFEST on (the default with DEBUG off):
# hashed, compressed names that `collectstatic` wrote to STATIC_ROOT, served with a year's
# Cache-Control; a file never collected fails loudly. Off (DEBUG on): plain names read from static/.
# The Dockerfile and `make serve` collect with it on, whatever DEBUG is.
STATIC_MANIFEST = env_bool("STATIC_MANIFEST", default=not DEBUG)
WHITENOISE_USE_FINDERS = WHITENOISE_AUTOREFRESH = not STATIC_MANIFEST

# Failed logins on these pages, limited in the cache (base/login_throttle.py): per account from
# one address, FAILURES_PER_USERNAME free failures, then pauses doubling from FIRST_DELAY_SECONDS up
# to MAX_DELAY_SECONDS; per address and per account (known addresses spared) within WINDOW_SECONDS.
LOGIN_THROTTLE = {
    "PATHS": ("/accounts/login/", "/admin/login/"),
    "FAILURES_PER_USERNAME": int(os.environ.get("LOGIN_FAILURES_PER_USERNAME", "5")),
    "FAILURES_PER_ADDRESS": int(os.environ.get("LOGIN_FAILURES_PER_ADDRESS", "20")),
    "FAILURES_PER_ACCOUNT": int(os.environ.get("LOGIN_FAILURES_PER_ACCOUNT", "50")),
    "WINDOW_SECONDS": int(os.environ.get("LOGIN_LOCKOUT_SECONDS", "900")),
    "FIRST_DELAY_SECONDS": int(os.environ.get("LOGIN_FIRST_DELAY_SECONDS", "60")),
    "MAX_DELAY_SECONDS": int(os.environ.get("LOGIN_MAX_DELAY_SECONDS", str(24 * 3600))),
    "KNOWN_ADDRESS_DAYS": int(os.environ.get("LOGIN_KNOWN_ADDRESS_DAYS", "90")),
    # Behind a reverse proxy: the header with the client's address, e.g. HTTP_X_FORWARDED_FOR.
    "CLIENT_IP_HEADER": os.environ.get("LOGIN_CLIENT_IP_HEADER", "REMOTE_ADDR"),
}
# Bad API tokens (DRF or node tokens, answered 401) per client address (the same header as above)
# before that address's token requests get 429 for the window.
API_FAILED_TOKENS = {
    "PER_ADDRESS": int(os.environ.get("API_FAILED_TOKENS_PER_ADDRESS", "20")),
    "WINDOW_SECONDS": int(os.environ.get("API_FAILED_TOKENS_SECONDS", "600")),
}

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# Where snapshots and checkpoints are written; GPU nodes on other machines reach the files over the API.
DATA_DIR = Path(os.environ.get("DATA_DIR", BASE_DIR / "var"))
SNAPSHOT_DIR = Path(os.environ.get("SNAPSHOT_DIR", DATA_DIR / "snapshots"))
CHECKPOINT_DIR = Path(os.environ.get("CHECKPOINT_DIR", DATA_DIR / "checkpoints"))
# Uploads (base/uploads.py): a file over UPLOAD_MAX_BYTES is refused while the body streams
# (LimitedUploadHandler, first of the handlers); nothing of it is written. The two memory sizes are
# Django's 2.5 MB defaults, stated so no one raises them for a large file: they are not its limit.
UPLOAD_MAX_BYTES = int(os.environ.get("UPLOAD_MAX_BYTES", str(1024**3)))
FILE_UPLOAD_HANDLERS = [
    "base.uploads.LimitedUploadHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]
FILE_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
DATA_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
# A GloVe-format text file (word followed by its vector on each line), or empty for random embeddings.
EMBEDDINGS_FILE = os.environ.get("EMBEDDINGS_FILE", "")
# Training runs write progress every few seconds; one silent for TRAINING_STALE_MINUTES is "node lost".
TRAINING_HEARTBEAT_SECONDS = float(os.environ.get("TRAINING_HEARTBEAT_SECONDS", "2"))
TRAINING_STALE_MINUTES = float(os.environ.get("TRAINING_STALE_MINUTES", "10"))
TRAINING_MAX_RESTARTS = int(os.environ.get("TRAINING_MAX_RESTARTS", "2"))
# The reaper (Celery beat, CELERY_BEAT_SCHEDULE): how often it looks, and whether a lost run is
# requeued (up to TRAINING_MAX_RESTARTS) instead of failed.
REAPER_INTERVAL_SECONDS = float(os.environ.get("REAPER_INTERVAL_SECONDS", "120"))
TRAINING_REAP_REQUEUE = env_bool("TRAINING_REAP_REQUEUE", default=False)
# Every other long task (base/long_tasks.py): one silent for LONG_TASK_STALE_SECONDS lost its
# process; the reaper starts it again, up to LONG_TASK_MAX_RESTARTS times, or fails it.
LONG_TASK_HEARTBEAT_SECONDS = float(os.environ.get("LONG_TASK_HEARTBEAT_SECONDS", "10"))
LONG_TASK_STALE_SECONDS = float(os.environ.get("LONG_TASK_STALE_SECONDS", "120"))
LONG_TASK_REAPER_SECONDS = float(os.environ.get("LONG_TASK_REAPER_SECONDS", "60"))
LONG_TASK_MAX_RESTARTS = int(os.environ.get("LONG_TASK_MAX_RESTARTS", "2"))

# A GPU node on another machine (docs/gpu-nodes.md) reaches the platform at PLATFORM_URL with a node
# token and holds no database credentials: without DATABASE_URL any ORM use fails loudly (dummy backend).
PLATFORM_URL = os.environ.get("PLATFORM_URL", "")
# WORKER_TOKEN, its old name, still works: a node configured before the rename keeps working.
NODE_TOKEN = os.environ.get("NODE_TOKEN", "") or os.environ.get("WORKER_TOKEN", "")
SNAPSHOT_CACHE_DIR = Path(os.environ.get("SNAPSHOT_CACHE_DIR", DATA_DIR / "snapshot-cache"))
SNAPSHOT_CACHE_MAX_BYTES = int(float(os.environ.get("SNAPSHOT_CACHE_MAX_GB", "20")) * 1024**3)
if PLATFORM_URL and NODE_TOKEN and not os.environ.get("DATABASE_URL"):
    DATABASES = {"default": {"ENGINE": "django.db.backends.dummy"}}

# Crowd markets (docs/markets.md). Credentials are sealed with Fernet keys from MARKET_CREDENTIALS_KEY
# (comma-separated: the first seals, all open, so a key can be rotated). The APIs' addresses are
# settings, never a researcher's input.
MARKET_CREDENTIALS_KEY = os.environ.get("MARKET_CREDENTIALS_KEY", "")
PROLIFIC_API_URL = os.environ.get("PROLIFIC_API_URL", "https://api.prolific.com/api/v1/")
MTURK_ENDPOINT_URL = os.environ.get("MTURK_ENDPOINT_URL", "")
MARKET_TIMEOUT_SECONDS = float(os.environ.get("MARKET_TIMEOUT_SECONDS", "20"))
# How long an arriving Prolific participant waits for the market's word on their ids before the
# first task (markets.identity); no answer by then: the session waits (code held, labels out of gold).
MARKET_ARRIVAL_TIMEOUT_SECONDS = float(os.environ.get("MARKET_ARRIVAL_TIMEOUT_SECONDS", "3"))
# Longest wait a 429's Retry-After may ask before one retry; longer: the call fails and says so.
MARKET_RETRY_WAIT_MAX_SECONDS = float(os.environ.get("MARKET_RETRY_WAIT_MAX_SECONDS", "30"))
# The longest wait before asking a model annotator's endpoint again after a 429 or 5xx (docs/model_annotators.md).
MODEL_ANNOTATOR_RETRY_WAIT_MAX_SECONDS = float(os.environ.get("MODEL_ANNOTATOR_RETRY_WAIT_MAX_SECONDS", "30"))
# Networks a researcher's URL (a model endpoint) may reach though not public, e.g. a lab's GPU node:
# "10.20.0.0/16,192.168.5.7/32". Empty: public addresses only (base/outbound.py, docs/outbound.md).
OUTBOUND_ALLOWED_NETWORKS = env_list("OUTBOUND_ALLOWED_NETWORKS", [])
# A webhook older (or newer) than this is refused as a possible replay.
MARKET_WEBHOOK_TOLERANCE_SECONDS = int(os.environ.get("MARKET_WEBHOOK_TOLERANCE_SECONDS", "300"))
MARKET_WEBHOOK_MAX_BYTES = int(os.environ.get("MARKET_WEBHOOK_MAX_BYTES", str(64 * 1024)))  # larger: 413, unread
# How long a payer holds bonuses it is sending before another payer may look at them again.
MARKET_PAYMENT_LEASE_SECONDS = int(os.environ.get("MARKET_PAYMENT_LEASE_SECONDS", "120"))
# How long a market's own record may lag behind the money it paid: a read of it says "not paid"
# for a pay whose answer proved nothing only when made this long after the pay (markets.answers).
MARKET_RECORD_SETTLE_SECONDS = int(os.environ.get("MARKET_RECORD_SETTLE_SECONDS", "900"))

# Files that more than one host reads go through Django's storage API (base/file_storage.py): the
# local folders above, or with a bucket an S3-compatible store shared by every host (docs/deployment.md).
OBJECT_STORAGE_BUCKET = os.environ.get("OBJECT_STORAGE_BUCKET", "")
STORAGES: dict[str, dict[str, Any]] = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if STATIC_MANIFEST
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
if OBJECT_STORAGE_BUCKET:
    from base.file_storage import object_storage_aliases

    STORAGES.update(
        object_storage_aliases(
            OBJECT_STORAGE_BUCKET,
            endpoint_url=os.environ.get("OBJECT_STORAGE_ENDPOINT_URL"),
            region=os.environ.get("OBJECT_STORAGE_REGION"),
            access_key=os.environ.get("OBJECT_STORAGE_ACCESS_KEY"),
            secret_key=os.environ.get("OBJECT_STORAGE_SECRET_KEY"),
        )
    )


# What a study may tune. The rules of the papers themselves (five labels a pair, gold at three
# votes, batches of five) are constants in the code (corpus.models, validation.selectors).
class NliSettings(TypedDict):
    """The type of NLI below, for the code that reads it (not a setting: Django reads upper-case names only)."""

    WRITING_CLAIM_MINUTES: int
    VALIDATION_CLAIM_MINUTES: int
    MAX_HYPOTHESIS_CHARS: int
    MAX_PREMISE_CHARS: int
    DEFAULT_DATASET: str
    MAX_REPORT_CHARS: NotRequired[int]  # collection.services reads it with a default of 500
    HOLD_WARNING_MINUTES: NotRequired[float]  # crowd.holds reads these three with defaults of 3, 1 and 1
    HOLD_EXTENSIONS: NotRequired[int]
    HOLD_TAKE_BACKS: NotRequired[int]


NLI: NliSettings = {
    "WRITING_CLAIM_MINUTES": int(os.environ.get("WRITING_CLAIM_MINUTES", "30")),
    "VALIDATION_CLAIM_MINUTES": int(os.environ.get("VALIDATION_CLAIM_MINUTES", "20")),
    # A task page warns this long before its hold ends and offers "More time" while the hold is
    # younger than HOLD_EXTENSIONS claim periods; once it ran out it may be taken back
    # HOLD_TAKE_BACKS times. Neither while another participant waits for work (docs/holds.md).
    "HOLD_WARNING_MINUTES": float(os.environ.get("HOLD_WARNING_MINUTES", "3")),
    "HOLD_EXTENSIONS": int(os.environ.get("HOLD_EXTENSIONS", "1")),
    "HOLD_TAKE_BACKS": int(os.environ.get("HOLD_TAKE_BACKS", "1")),
    "MAX_HYPOTHESIS_CHARS": 500,
    # Longer "sentences" in an import are dropped with their reason (collection.premise_text).
    "MAX_PREMISE_CHARS": int(os.environ.get("MAX_PREMISE_CHARS", "1000")),
    "DEFAULT_DATASET": os.environ.get("NLI_DEFAULT_DATASET", "collected"),
}

# Dashboard aggregates are cached this many seconds per page, dataset and split; 0 turns it off.
DASHBOARD_CACHE_SECONDS = int(os.environ.get("DASHBOARD_CACHE_SECONDS", "5"))
# From this many pairs on, a stale dashboard figure is shown at once while a task recomputes it.
DASHBOARD_LARGE_PAIRS = int(os.environ.get("DASHBOARD_LARGE_PAIRS", "200000"))

# A cache shared by web processes and Celery workers (Redis) when CACHE_URL is set; else per process.
CACHE_URL = os.environ.get("CACHE_URL", "")
if CACHE_URL:
    CACHES = {
        "default": {"BACKEND": "base.redis_cache.SharedClientRedisCache", "LOCATION": CACHE_URL, "KEY_PREFIX": "nli"}
    }
    # A session read is one Redis GET (the database keeps every session too, so a flushed cache loses
    # nothing). Never with per-process caches: another process would read its own stale copy.
    SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Celery: with no broker, tasks run in-process (embedded mode).
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "")
# Read before the embedded mode fills in its in-memory URL below: settings that mean "a real
# broker" ask this, never CELERY_BROKER_URL, which is never empty after the next lines.
HAS_BROKER = bool(CELERY_BROKER_URL)
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND", CELERY_BROKER_URL)
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
if CELERY_TASK_ALWAYS_EAGER:
    # Eager tasks still open a producer; kombu's in-memory transport needs no server (and does
    # not warn "No hostname was supplied" on every task, as the default AMQP transport did).
    CELERY_BROKER_URL = "memory://localhost/"
# Without a broker, where tasks run: "background" (a thread of the web process, so no request waits;
# `runserver` and the WSGI app set it) or "inline" (in the caller, as commands and tests want).
EMBEDDED_TASKS = os.environ.get("EMBEDDED_TASKS", "inline")
if EMBEDDED_TASKS not in ("background", "inline"):
    raise RuntimeError(f"EMBEDDED_TASKS must be 'background' or 'inline', not {EMBEDDED_TASKS!r}")
CELERY_RESULT_EXPIRES = 24 * 3600
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_TASK_ROUTES = {
    "modeling.tasks.run_training": {"queue": "gpu"},
    "modeling.tasks.run_packed_training": {"queue": "gpu"},
}
# Task modules outside the apps' tasks.py: the long-task reaper lives in the composition root.
CELERY_IMPORTS = ("annotation_site.wiring", "base.task_queue")
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 6 * 3600}
# Artifacts: new pairs are tagged (and the monitor refreshed) by a Celery worker after their
# transaction commits; off in the embedded mode, where the task would run inside the request.
ARTIFACTS_ON_ARRIVAL = env_bool("ARTIFACTS_ON_ARRIVAL", default=HAS_BROKER)
# Writing submits queue the arrival task once per this many seconds per web process, to start that
# much later (base.task_queue.enqueue_coalesced): one task a window tags a burst's pairs together.
ARTIFACTS_ARRIVAL_COALESCE_SECONDS = float(os.environ.get("ARTIFACTS_ARRIVAL_COALESCE_SECONDS", "5"))
ARTIFACTS_NUDGE_OUTSIDE_STUDIES = env_bool("ARTIFACTS_NUDGE_OUTSIDE_STUDIES", default=True)  # studies: StudyNudge
ARTIFACTS_MONITOR_EVERY_PAIRS = int(os.environ.get("ARTIFACTS_MONITOR_EVERY_PAIRS", "3000"))
# Folding the maintained tallies' deltas (corpus.tallies.fold): on the beat only, never in a
# writer's request (a fold reads every tally table).
TALLY_FOLD_INTERVAL_SECONDS = float(os.environ.get("TALLY_FOLD_INTERVAL_SECONDS", "60"))
# How often the beat starts an aggregation run (and so the correlated-error check) on each
# dataset whose code-holding studies got labels since its last run (quality.aggregation_runs).
CORRELATED_CHECK_INTERVAL_SECONDS = float(os.environ.get("CORRELATED_CHECK_INTERVAL_SECONDS", "900"))
ARTIFACTS_PARSE_TREES = env_bool("ARTIFACTS_PARSE_TREES", default=True)  # Penn trees of written pairs, same spaCy pass
# A tagging job this large tags in a spawned process of its own (artifacts.services.run_tagging_job);
# below it, the spawned tagger's start costs more than the overlap saves (bench/RESULTS-docstrings.md).
ARTIFACTS_TAGGING_PROCESS_MIN_PAIRS = int(os.environ.get("ARTIFACTS_TAGGING_PROCESS_MIN_PAIRS", "20000"))
# Such a job's tagging processes when it parses pairs written on the platform (tag + parse costs
# more than the tagger alone per core): two reach the tagger's speed (artifacts.services.job_processes).
ARTIFACTS_PARSING_PROCESSES = int(os.environ.get("ARTIFACTS_PARSING_PROCESSES", str(min(2, os.cpu_count() or 1))))
# The one beat schedule of the project (`celery -A annotation_site beat`; docker-compose's `beat`,
# `make beat` or `make worker`, which runs beat inside the Celery worker, on a workstation).
CELERY_BEAT_SCHEDULE = {
    # Closing adversarial rounds: snapshots done -> next target trained -> next round opened.
    "adversarial-advance-rounds": {"task": "adversarial.advance_rounds", "schedule": 30.0},
    # Pairs no arrival trigger caught (imports, a Celery worker that was down) get their phenomenon tags.
    "artifacts-tag-untagged": {"task": "artifacts.tag_untagged", "schedule": 3600.0},
    # Every collected dataset with pairs added since its last refresh: the artifact monitor.
    "artifacts-monitor": {"task": "artifacts.periodic_monitor", "schedule": 3600.0},
    # Flagged workers of studies that opted in to automatic exclusion (off by default).
    "quality-auto-exclude-flagged": {"task": "quality.auto_exclude_flagged", "schedule": 3600.0},
    # Datasets of code-holding studies with new labels: a run, so the correlated-error check holds money unasked.
    "quality-aggregate-changed-datasets": {
        "task": "quality.aggregate_changed_datasets",
        "schedule": CORRELATED_CHECK_INTERVAL_SECONDS,
    },
    # Expired validation, per-premise and grammaticality claims marked expired (validation/tasks.py).
    "validation-release-expired-claims": {
        "task": "validation.release_expired_claims",
        "schedule": float(os.environ.get("CLAIM_RELEASE_INTERVAL_SECONDS", "300")),
    },
    # Every maintained tally's deltas folded into one row per key (corpus/tasks.py).
    "corpus-fold-tallies": {"task": "corpus.fold_tallies", "schedule": TALLY_FOLD_INTERVAL_SECONDS},
    # Crowd markets (docs/markets.md): assignments polled, sessions approved, lost payments reconciled.
    "markets-poll-mturk": {"task": "markets.poll_mturk_assignments", "schedule": 300.0},
    "markets-approve-checked": {"task": "markets.approve_checked_sessions", "schedule": 300.0},
    "markets-reconcile-payments": {"task": "markets.reconcile_bonus_payments", "schedule": 600.0},
    # Arrivals the market has not answered for yet (down, or an MTurk assignment not yet submitted).
    "markets-check-arrivals": {"task": "markets.check_pending_arrivals", "schedule": 300.0},
    # Training runs whose whole Celery worker died: failed (or requeued) without a human.
    "modeling-reap-training-runs": {"task": "modeling.tasks.reap_training_runs", "schedule": REAPER_INTERVAL_SECONDS},
    # Long tasks whose process died: started again or failed within minutes (base/long_tasks.py).
    "reap-long-tasks": {"task": "annotation_site.reap_long_tasks", "schedule": LONG_TASK_REAPER_SECONDS},
    # Personal data past its study's retention pseudonymised (privacy/services.py, docs/privacy.md).
    "privacy-apply-retention": {"task": "privacy.apply_retention", "schedule": 86400.0},
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["base.permissions.IsResearcher"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    # An unknown object named by a request is a 404, not a 400 (base/api_errors.py).
    "EXCEPTION_HANDLER": "base.api_errors.exception_handler",
    # JSON with NUL, too deep, or NaN/Infinity: 400 once the client is authenticated (base/parsers.py).
    "DEFAULT_PARSER_CLASSES": [
        "base.parsers.CheckedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    # Per token/user and per address for the anonymous (who only ever get 401/403).
    "DEFAULT_THROTTLE_CLASSES": [
        "rest_framework.throttling.UserRateThrottle",
        "rest_framework.throttling.AnonRateThrottle",
    ],
    # Behind one reverse proxy set API_NUM_PROXIES=1, so X-Forwarded-For cannot be forged.
    "NUM_PROXIES": int(os.environ["API_NUM_PROXIES"]) if os.environ.get("API_NUM_PROXIES") else None,
    "DEFAULT_THROTTLE_RATES": {
        "user": os.environ.get("API_THROTTLE_USER", "1200/minute"),
        "anon": os.environ.get("API_THROTTLE_ANON", "60/minute"),
    },
}
SPECTACULAR_SETTINGS = {
    "TITLE": "NLI annotation platform API",
    "DESCRIPTION": "Snapshots, pairs and agreement statistics in the MultiNLI format.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "modeling.api.schema.document_real_responses",
    ],
}

LOG_LEVEL = os.environ.get("LOG_LEVEL", "WARNING")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # The handler has the level too: propagation skips the root's level, so Django's INFO lines
    # were printed twice, once by its own console handler and once here.
    "handlers": {"console": {"class": "logging.StreamHandler", "level": LOG_LEVEL}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
}
