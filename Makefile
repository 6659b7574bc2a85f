# Two commands do all set-up on a fresh machine with only Python:
#   make demo   create .venv, install, migrate, load demo data, serve on 127.0.0.1:8000
#   make test   same set-up, then the whole test suite
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
HOST   ?= 127.0.0.1
PORT   ?= 8000
PYTEST_ARGS ?=
# DEBUG is off unless asked for; the local targets (demo, serve, workers) ask. Production
# (docker-compose.yml) sets DEBUG=0 and a real SECRET_KEY.
export DEBUG ?= 1

.PHONY: demo test install serve worker beat gpu-worker migrate browser clean

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

# In CI (CI=true) a browser that cannot be installed stops the run here; on a workstation the
# browser tests skip instead and say why. pytest's exit status is make's.
test: install
	@bash scripts/ensure_chromium.sh || { [ "$${CI:-}" != true ] && echo "(outside CI: browser tests will skip)"; }
	$(BIN)/python -m pytest $(PYTEST_ARGS)

serve: migrate
	$(BIN)/python manage.py collectstatic --noinput >/dev/null
	$(BIN)/gunicorn annotation_site.wsgi -c gunicorn.conf.py --bind $(HOST):$(PORT)

# A workstation's one worker also runs the schedule (-B: tagging sweep, monitor refresh, reaper;
# annotation_site/celery.py). With several workers, run `make beat` once and the workers without -B.
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
