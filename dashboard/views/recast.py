"""Recasting from the dashboard: choose a shipped template, paste source rows, see the first pairs
(a dry run: nothing saved), then save them all in one transaction. Large sources: `manage.py recast`."""

import tempfile
from pathlib import Path
from typing import Any

from django.contrib import messages
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods

from corpus.models import Split
from importers import recast_rows, recast_templates
from importers.recast_service import PREVIEW_PAIRS, RecastRefused, dry_run, recast_into

from .common import render_page, researcher_required

FORMATS = ("jsonl", "csv", "tsv")


def _rows(text: str, fmt: str) -> list[dict[str, Any]]:
    """The pasted rows, read by the same reader as the command (a temporary file: the reader is lazy)."""
    with tempfile.NamedTemporaryFile("w", suffix=f".{fmt}", encoding="utf-8", delete=False) as handle:
        handle.write(text)
    try:
        return list(recast_rows.read_rows(handle.name, fmt))
    finally:
        Path(handle.name).unlink(missing_ok=True)


@researcher_required
@require_http_methods(["GET", "POST"])
def recast(request: HttpRequest) -> HttpResponseBase:
    data = request.POST if request.method == "POST" else {}
    form = {
        "template": data.get("template", "sentiment"),
        "dataset": data.get("dataset", "").strip(),
        "split": data.get("split", Split.DEV),
        "format": data.get("format", "jsonl"),
        "rows": data.get("rows", ""),
        "seed": data.get("seed", "0"),
    }
    preview, error = None, None
    if request.method == "POST":
        templates = recast_templates.shipped_templates()
        try:
            if form["template"] not in templates:
                raise RecastRefused(f"choose one of the templates: {', '.join(templates)}")
            if not form["dataset"]:
                raise RecastRefused("name the dataset the pairs go to")
            if form["split"] not in Split.values or form["format"] not in FORMATS:
                raise RecastRefused("choose a split and a format")
            seed = int(form["seed"]) if form["seed"].strip().lstrip("-").isdigit() else 0
            rows = _rows(form["rows"], form["format"])
            if request.POST.get("action") == "save":
                report = recast_into(
                    templates[form["template"]],
                    rows,
                    form["dataset"],
                    form["split"],
                    seed,
                    source=f"dashboard: template {form['template']}",
                    user=request.user,
                )
                messages.success(request, f"Saved {report.pairs_created} pairs in {report.dataset} ({report.split}).")
                return redirect("dashboard:recast")
            preview = dry_run(
                templates[form["template"]],
                rows,
                PREVIEW_PAIRS,
                form["split"],
                seed,
                dataset=form["dataset"],
                user=request.user,
            )
        except (RecastRefused, recast_templates.RecastError, ValueError) as refused:
            error = str(refused)
            if request.POST.get("action") == "save" and "nothing was saved" not in error:
                error += "; nothing was saved"
    return render_page(
        request,
        "dashboard/recast.html",
        "recast",
        form=form,
        preview=preview,
        error=error,
        templates=list(recast_templates.shipped_templates()),
        splits=Split.values,
        formats=FORMATS,
        status=400 if error else 200,
    )
