"""Worker pages must not pay for the researchers' heavy libraries: loading the URLconf (what a
web process does before its first request) imports neither matplotlib nor torch."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import sys
import django
django.setup()
from django.urls import resolve
resolve("/write/next/")
resolve("/validate/next/")
heavy = sorted(name for name in ("matplotlib", "torch") if name in sys.modules)
print(",".join(heavy))
"""


def test_the_urlconf_imports_no_matplotlib_nor_torch():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "annotation_site.settings"}
    result = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "", f"imported on the request path: {result.stdout.strip()}"


def test_figures_still_draw():
    from dashboard import plots

    svg = plots.hourly_bars([])
    assert svg.startswith("<svg") and 'class="plot"' in svg
