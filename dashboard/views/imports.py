"""Imports from the dashboard (issue 41): premise files of one genre and corpus files (SNLI,
MultiNLI, GLUE MNLI) uploaded, checked at once, imported by a Celery worker with the commands'
rules (all or nothing, malformed lines reported by number), with their progress while they run."""

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, JsonResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_http_methods

from annotation_site.permissions import IMPORT_DATA
from annotation_site.uploads import readable_size, upload_refusal
from collection.models import PremiseImport
from collection.premise_import import PremiseImportError, queue_premise_upload
from corpus.models import Split
from dashboard.queries import imports as queries
from dashboard.queries.common import datasets as all_datasets
from dashboard.queries.common import genres as all_genres
from importers.models import CorpusImport
from importers.services import CorpusImportError, queue_pairs_upload

from .common import polled_ids, progress_json, render_page, researcher_required

ROW_TEMPLATES = {"premises": "dashboard/_premise_import_row.html", "pairs": "dashboard/_corpus_import_row.html"}


@researcher_required(post_permission=IMPORT_DATA)
@require_http_methods(["GET", "POST"])
def imports(request: HttpRequest) -> HttpResponseBase:
    if request.method == "POST":
        refused = upload_refusal(request)  # over UPLOAD_MAX_BYTES: stopped while the body streamed
        if refused is not None:
            messages.error(request, refused)
            return redirect("dashboard:imports")
        kind = request.POST.get("kind")
        uploaded = request.FILES.get("file")
        if kind not in ROW_TEMPLATES or uploaded is None:
            messages.error(request, "Choose what to import and a file; nothing was imported.")
            return redirect("dashboard:imports")
        try:
            if kind == "premises":
                queued: PremiseImport | CorpusImport = queue_premise_upload(
                    uploaded,
                    request.POST.get("genre", ""),
                    request.POST.get("dataset", ""),
                    request.POST.get("format", "auto"),
                )
            else:
                queued = queue_pairs_upload(
                    uploaded,
                    request.POST.get("dataset", ""),
                    split=request.POST.get("split") or None,
                    genre=request.POST.get("genre") or None,
                )
        except (PremiseImportError, CorpusImportError) as refused:
            messages.error(request, f"{uploaded.name}: {refused}")
        else:
            messages.success(request, f"{uploaded.name} is queued for import as #{queued.pk}; its row is below.")
        return redirect("dashboard:imports")
    return render_page(
        request,
        "dashboard/imports.html",
        "imports",
        genres=all_genres(),
        datasets=all_datasets(),
        splits=Split.values,
        upload_limit=readable_size(settings.UPLOAD_MAX_BYTES),
        premise_imports=queries.recent_premise_imports(),
        corpus_imports=queries.recent_corpus_imports(),
    )


@researcher_required
@require_GET
def imports_progress(request: HttpRequest, kind: str) -> HttpResponseBase:
    """Live progress for one list of imports: the rows re-rendered, as the snapshot list does."""
    if kind not in ROW_TEMPLATES:
        return JsonResponse({"detail": f"unknown kind {kind!r}; one of {', '.join(ROW_TEMPLATES)}"}, status=400)
    return progress_json(request, queries.imports_by_id(kind, polled_ids(request)), ROW_TEMPLATES[kind], "run")
