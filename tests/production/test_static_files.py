"""Static files through gunicorn with DEBUG off: before WhiteNoise, gunicorn served
nothing under /static/ and every page's scripts and styles answered 404 in the shipped deployment.

The server here only answers files and a page without rows, so it runs on both databases: no
broker, no cache server, tasks inline (its embedded beat would otherwise query a database that
no test migrated).
"""

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import Gunicorn, fetch, gunicorn_server, production_environment

pytestmark = pytest.mark.slow

HASHED = re.compile(r"^/static/.+\.[0-9a-f]{12}\.(js|css|svg)$")
A_YEAR = 365 * 24 * 3600


@pytest.fixture(scope="module")
def file_server(collected_static: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gunicorn]:
    folder = tmp_path_factory.mktemp("file-server")
    env = production_environment(
        collected_static, DATABASE_URL="postgres://postgres@127.0.0.1:1/never_opened", EMBEDDED_TASKS="inline"
    )
    for name in ("CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "CACHE_URL"):
        env.pop(name, None)
    with gunicorn_server(env, folder / "gunicorn.log") as server:
        yield server


def max_age(answer) -> int:
    found = re.search(r"max-age=(\d+)", answer.headers.get("cache-control", ""))
    return int(found.group(1)) if found else 0


def test_the_writing_pages_script_answers_200_through_gunicorn_with_debug_off(file_server, collected_static):
    plain = fetch(f"{file_server.url}/static/js/typing_evidence.js")
    assert plain.status == 200, f"{plain.status}: /static/ is not served with DEBUG off"
    assert plain.body == (collected_static / "js" / "typing_evidence.js").read_bytes()
    assert plain.headers["content-type"].startswith("text/javascript")
    # Its hashed name, as the production pages write it: compressed, cached for a year, immutable.
    hashed = json.loads((collected_static / "staticfiles.json").read_text())["paths"]["js/typing_evidence.js"]
    answer = fetch(f"{file_server.url}/static/{hashed}", {"Accept-Encoding": "gzip"})
    assert answer.status == 200 and answer.headers.get("content-encoding") == "gzip"
    assert max_age(answer) >= A_YEAR and "immutable" in answer.headers["cache-control"]


def test_a_page_names_its_files_by_hash_and_every_one_answers_with_a_long_cache(file_server):
    page = fetch(f"{file_server.url}/accounts/login/")
    assert page.status == 200
    named = re.findall(r'(?:src|href)="(/static/[^"]+)"', page.body.decode())
    unhashed = [path for path in named if not HASHED.match(path)]
    assert unhashed == [], f"not hashed names: {unhashed}"
    assert {"css/site", "js/worker", "favicon"} <= {
        re.sub(r"\.[0-9a-f]{12}\..*$", "", n[len("/static/") :]) for n in named
    }
    for path in named:
        answer = fetch(f"{file_server.url}{path}")
        assert answer.status == 200, path
        assert max_age(answer) >= A_YEAR, (path, answer.headers.get("cache-control"))
    # The page keeps its content security policy: scripts from the site only.
    assert "script-src 'self'" in page.headers["content-security-policy"]


def test_a_file_that_was_never_collected_is_a_404_not_a_page(file_server):
    answer = fetch(f"{file_server.url}/static/js/no-such-script.js")
    assert answer.status == 404
