"""Production settings: DEBUG off unless asked, no weak SECRET_KEY, `check --deploy` clean with
the compose environment, a content security policy, and friendly error pages."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from django.http import HttpResponse
from django.test import override_settings
from django.urls import path

REPO = Path(__file__).resolve().parent.parent
GOOD_KEY = "x7Kq2pL9vR4mN8sT1wY6zB3cF5hJ0dG2aE7uI9oP4lM6nQ1rS8tV3"


def compose_environment():
    """The app environment of docker-compose.yml with .env-like values filled in."""
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    values = {
        "SECRET_KEY": GOOD_KEY,
        "POSTGRES_PASSWORD": "pw",
        "ALLOWED_HOSTS": "nli.example.org",
        "CSRF_TRUSTED_ORIGINS": "https://nli.example.org",
        "SITE_DOMAIN": "nli.example.org",
    }

    def fill(value):
        return re.sub(r"\$\{(\w+)(?::?[-?][^}]*)?\}", lambda m: values.get(m.group(1), ""), str(value))

    return {name: fill(value) for name, value in compose["x-app-environment"].items()}


def run_manage(env_overrides, *args):
    # A clean environment, as a container has: nothing from the test process leaks in.
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp")}
    env.update(env_overrides)
    env["DJANGO_SETTINGS_MODULE"] = "annotation_site.settings"
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )


def test_compose_environment_passes_check_deploy():
    env = compose_environment()
    # check --deploy needs no database; the compose one is not reachable here (nor is this one).
    env["DATABASE_URL"] = "postgres://postgres@127.0.0.1:1/never_opened"
    result = run_manage(env, "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_compose_has_no_default_password_and_no_public_app_port():
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    assert ":-nli" not in (REPO / "docker-compose.yml").read_text()
    assert "ports" not in compose["services"]["web"]
    assert compose["services"]["proxy"]["ports"] == ["80:80", "443:443"]
    # Celery beat runs the schedule, and the schedule holds the training-run reaper.
    assert compose["services"]["beat"]["command"][:4] == ["celery", "-A", "annotation_site", "beat"]
    from django.conf import settings

    assert "modeling.tasks.reap_training_runs" in {e["task"] for e in settings.CELERY_BEAT_SCHEDULE.values()}
    assert compose["x-app-environment"]["DEBUG"] == "0"
    assert "USER app" in (REPO / "Dockerfile").read_text()


DOCKER_SIZE_UNITS = {"b": 1, "k": 2**10, "kb": 2**10, "m": 2**20, "mb": 2**20, "g": 2**30, "gb": 2**30}


def docker_size(value):
    """Bytes of a compose size ("1gb", "512m", a plain number of bytes)."""
    size = re.fullmatch(r"(\d+)\s*([a-z]*)", str(value).strip().lower())
    assert size is not None, f"not a compose size: {value!r}"
    number, unit = size.groups()
    return int(number) * DOCKER_SIZE_UNITS[unit or "b"]


def test_the_database_container_has_shared_memory_for_parallel_queries():
    # The export's parallel lines statement took 49.6 MB of /dev/shm at 433k pairs; Docker's
    # default for a container is 64 MB, which a larger corpus or a second parallel query exceeds
    # ("could not resize shared memory segment").
    postgres = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]["postgres"]
    assert docker_size(postgres.get("shm_size", "64m")) >= 512 * 2**20


@pytest.mark.parametrize(
    "env, message",
    [
        ({}, "SECRET_KEY must be set"),
        ({"SECRET_KEY": "short-key"}, "SECRET_KEY must be set"),
        ({"SECRET_KEY": "change-me-to-a-long-random-string"}, "SECRET_KEY must be set"),
        ({"SECRET_KEY": "a" * 60}, "SECRET_KEY must be set"),
        ({"SECRET_KEY": "django-insecure-" + GOOD_KEY}, "SECRET_KEY must be set"),
        ({"DEBUG": "0", "SECRET_KEY": ""}, "SECRET_KEY must be set"),
    ],
)
def test_debug_is_off_by_default_and_a_weak_secret_key_is_refused(env, message):
    result = run_manage(env, "check")
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and message in result.stderr


def test_debug_must_be_asked_for():
    script = "import django; django.setup(); from django.conf import settings; print(settings.DEBUG)"
    env = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "DJANGO_SETTINGS_MODULE")}
    env.update(SECRET_KEY=GOOD_KEY, DJANGO_SETTINGS_MODULE="annotation_site.settings")
    off = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True)
    on = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, env={**env, "DEBUG": "1"}, capture_output=True, text=True
    )
    assert off.stdout.strip() == "False" and on.stdout.strip() == "True"


def test_pages_carry_a_content_security_policy(client, db):
    response = client.get("/accounts/login/")
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy and "object-src 'none'" in policy
    assert "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]


def test_templates_have_no_inline_scripts():
    for template in (REPO / "templates").rglob("*.html"):
        text = template.read_text()
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", text), template
        assert not re.search(r"\son[a-z]+=\"", text), template


def _boom(request):
    raise RuntimeError("secret internals")


urlpatterns = [path("boom/", _boom), path("ok/", lambda request: HttpResponse("ok"))]


@override_settings(ROOT_URLCONF=__name__, DEBUG=False)
def test_a_server_error_is_a_friendly_page(client, db):
    client.raise_request_exception = False
    response = client.get("/boom/")
    assert response.status_code == 500
    page = response.content.decode()
    assert "Something went wrong on our side" in page and "secret internals" not in page and "Traceback" not in page


@pytest.mark.parametrize(
    "url, status, text", [("/no-such-page/", 404, "Page not found"), ("/study/nope/", 404, "Page not found")]
)
def test_not_found_is_a_friendly_page(client, db, url, status, text):
    response = client.get(url)
    assert response.status_code == status and text in response.content.decode()
    assert "Django" not in response.content.decode()


def test_forbidden_is_a_friendly_page(client, db):
    client.cookies.clear()
    client_with_csrf = client.__class__(enforce_csrf_checks=True)
    response = client_with_csrf.post("/accounts/login/", {"username": "a", "password": "b"})
    assert response.status_code == 403
    assert "This form has expired" in response.content.decode() and "DEBUG" not in response.content.decode()


def test_manage_py_without_debug_or_key_says_what_to_set_without_a_traceback():
    result = run_manage({}, "check")
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert "DEBUG=1 .venv/bin/python manage.py" in result.stderr


def test_manage_py_on_a_workstation_with_debug_asked_for_runs():
    result = run_manage({"DEBUG": "1", "DATABASE_URL": "postgres://postgres@127.0.0.1:1/never_opened"}, "check")
    assert result.returncode == 0, result.stderr


STATIC_SETTINGS = (
    "import json, django; django.setup(); from django.conf import settings; "
    "print(json.dumps([settings.STORAGES['staticfiles']['BACKEND'], settings.MIDDLEWARE[:2], "
    "settings.WHITENOISE_AUTOREFRESH, settings.WHITENOISE_USE_FINDERS]))"
)


def static_settings(**env_changes):
    env = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "DJANGO_SETTINGS_MODULE", "STATIC_MANIFEST")}
    env.update(DJANGO_SETTINGS_MODULE="annotation_site.settings", **env_changes)
    done = subprocess.run([sys.executable, "-c", STATIC_SETTINGS], cwd=REPO, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_production_settings_serve_static_files_from_the_app_with_hashed_compressed_names():
    """Nothing served /static/ with DEBUG off: gunicorn serves no files and the proxy
    only proxies. The production settings put WhiteNoise right after SecurityMiddleware and name
    files from collectstatic's manifest (hashed, compressed, cached for a year)."""
    backend, middleware, autorefresh, finders = static_settings(DEBUG="0", SECRET_KEY=GOOD_KEY)
    assert backend == "whitenoise.storage.CompressedManifestStaticFilesStorage"
    assert middleware == ["django.middleware.security.SecurityMiddleware", "whitenoise.middleware.WhiteNoiseMiddleware"]
    assert autorefresh is False and finders is False  # only what collectstatic wrote, read once


def test_with_debug_on_static_files_need_no_collectstatic_unless_the_manifest_is_asked_for():
    # Workstations and the test suite render pages without collectstatic: plain names from static/.
    backend, middleware, autorefresh, finders = static_settings(DEBUG="1")
    assert backend == "django.contrib.staticfiles.storage.StaticFilesStorage"
    assert middleware[1] == "whitenoise.middleware.WhiteNoiseMiddleware" and autorefresh and finders
    # The Dockerfile's build and `make serve` collect with STATIC_MANIFEST=1 whatever DEBUG is.
    backend, *_ = static_settings(DEBUG="1", STATIC_MANIFEST="1")
    assert backend == "whitenoise.storage.CompressedManifestStaticFilesStorage"


def test_the_image_and_make_serve_collect_what_production_serves_and_compose_runs_the_shipped_gunicorn_config():
    dockerfile = (REPO / "Dockerfile").read_text()
    collect = next(line for line in dockerfile.splitlines() if "collectstatic" in line)
    assert "STATIC_MANIFEST=1" in collect.split("python")[0]
    assert 'CMD ["gunicorn", "annotation_site.wsgi", "-c", "gunicorn.conf.py"]' in dockerfile
    assert "serve: export STATIC_MANIFEST = 1" in (REPO / "Makefile").read_text()
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    assert compose["services"]["web"]["command"] == ["gunicorn", "annotation_site.wsgi", "-c", "gunicorn.conf.py"]
    # Caddy only proxies: no file server, no volume of static files beside it.
    proxy = compose["services"]["proxy"]
    assert proxy["command"][:2] == ["caddy", "reverse-proxy"] and proxy["volumes"] == ["caddy-data:/data"]
