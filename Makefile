# Two commands do all set-up on a fresh machine with only Python:
#   make demo   create .venv, install, migrate, load demo data, serve on 127.0.0.1:8000
#   make test   same set-up, then the checks (make check) and the whole test suite under coverage
#   make check  ruff (lint, import order, format) and mypy; docs/checks.md
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
HOST   ?= 127.0.0.1
PORT   ?= 8000
PYTEST_ARGS ?=
# DEBUG is off unless asked for; the local targets (demo, serve, the Celery workers) ask. Production
# (docker-compose.yml) sets DEBUG=0 and a real SECRET_KEY.
export DEBUG ?= 1

.PHONY: demo test check install serve worker beat gpu-worker migrate browser clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Reinstalls whenever a requirements file changes.
$(VENV)/.installed: requirements.txt requirements-dev.txt requirements-nodeps.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	$(BIN)/python -m pip install --quiet --no-deps -r requirements-nodeps.txt
	touch $@

install: $(VENV)/.installed

migrate: install
	$(BIN)/python manage.py migrate --noinput

demo: migrate
	$(BIN)/python manage.py load_demo --serving --site http://$(HOST):$(PORT)
	$(BIN)/python manage.py runserver $(HOST):$(PORT)

# Headless Chromium for the browser tests: Debian's package, never a downloaded browser.
browser:
	@bash scripts/ensure_chromium.sh

# The checks CI runs before the suite (and .pre-commit-config.yaml before a commit).
check: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy .

# In CI (CI=true) a browser that cannot be installed stops the run here; on a workstation the
# browser tests skip instead and say why. pytest's exit status is make's.
# The suite runs under coverage (branch coverage, Python subprocesses included; pyproject.toml);
# the data and report stay in $(COVERAGE_DIR) (var/coverage/ unless asked), and .ci/run checks
# the SQLite pass against coverage-floor.json. COVERAGE=0 runs the suite without it (.ci/run's
# PostgreSQL pass: coverage doubles the CPU a test takes on Python 3.11, and one pass measures
# it). CHECKS= leaves out the checks: .ci/run runs them once and its two passes side by side.
COVERAGE_DIR ?= var/coverage
COVERAGE ?= 1
CHECKS ?= check
test: install $(CHECKS)
	@bash scripts/ensure_chromium.sh || { [ "$${CI:-}" != true ] && echo "(outside CI: browser tests will skip)"; }
ifeq ($(COVERAGE),0)
	$(BIN)/python -m pytest $(PYTEST_ARGS)
else
	@rm -rf $(COVERAGE_DIR) && mkdir -p $(COVERAGE_DIR)
	@export COVERAGE_FILE="$(abspath $(COVERAGE_DIR))/.coverage"; status=0; \
	$(BIN)/coverage run -m pytest $(PYTEST_ARGS) || status=$$?; \
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
serve: migrate
	$(BIN)/python manage.py collectstatic --noinput >/dev/null
	$(BIN)/gunicorn annotation_site.wsgi -c gunicorn.conf.py --bind $(HOST):$(PORT)

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

clean:
	rm -rf $(VENV) var db.sqlite3
