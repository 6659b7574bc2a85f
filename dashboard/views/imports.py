"""Imports from the dashboard: premise files of one genre and corpus files (SNLI,
MultiNLI, GLUE MNLI) uploaded, checked at once, imported by a Celery worker with the commands'
rules (all or nothing, malformed lines reported by number), with their progress while they run."""

from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, JsonResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from base.permissions import IMPORT_DATA
from base.uploads import readable_size, upload_refusal
from collection.models import PremiseImport
from collection.premise_import import PremiseImportError
from collection.premise_uploads import queue_premise_upload
from collection.splits import SplitAssignmentError, assign_splits
from corpus.models import Split
from corpus.scope import Scope
from dashboard.queries import imports as queries
from dashboard.queries.common import dataset as dataset_named
from dashboard.queries.common import genres as all_genres
from dashboard.queries.runs import embedded_queue
from importers.models import CorpusImport
from importers.services import CorpusImportError, queue_pairs_upload
from teams import access
from validation import batch_claims
from validation import services as validation_services

from .common import polled_ids, progress_json, render_page, researcher_required

# The premise form's choices: a writing study serves only premises with a split.
PREMISE_SPLITS = [("train", "train"), ("dev", "dev"), ("test", "test"), ("", "none yet (assign splits below)")]
PREMISE_FORMATS = [("auto", "from the file"), ("text", "plain text"), ("jsonl", "JSON lines")]
PREMISE_CHOICES = ("genre", "dataset", "split", "format")
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
        running = queries.running_jobs(_teams_datasets(request))  # before this upload: what it waits behind
        try:
            if kind == "premises":
                queued: PremiseImport | CorpusImport = queue_premise_upload(
                    uploaded,
                    request.POST.get("genre", ""),
                    request.POST.get("dataset", ""),
                    request.POST.get("format", "auto"),
                    request.POST.get("split", ""),
                    user=request.user,
                )
            else:
                queued = queue_pairs_upload(
                    uploaded,
                    request.POST.get("dataset", ""),
                    split=request.POST.get("split") or None,
                    genre=request.POST.get("genre") or None,
                    user=request.user,
                )
        except (PremiseImportError, CorpusImportError) as refused:
            messages.error(request, f"{uploaded.name}: {refused}")
        else:
            messages.success(
                request,
                f"{uploaded.name} is queued for import as #{queued.pk} into {queued.dataset.slug} (its row is below): "
                f"{queries.waiting_text(running)}.",
            )
        return redirect(_with_last_choices(request) if kind == "premises" else "dashboard:imports")
    among = _teams_datasets(request)
    datasets = queries.datasets_with_unassigned(among)
    return render_page(
        request,
        "dashboard/imports.html",
        "imports",
        genres=all_genres(),
        datasets=datasets,
        last=_last_choices(request),
        premise_splits=PREMISE_SPLITS,
        premise_formats=PREMISE_FORMATS,
        splits=Split.values,
        upload_limit=readable_size(settings.UPLOAD_MAX_BYTES),
        premise_imports=queries.recent_premise_imports(scope=among),
        corpus_imports=queries.recent_corpus_imports(scope=among),
        embedded_queue=embedded_queue(),
        # The listed datasets where the user may do research: the marking form's.
        validation_marking=queries.validation_marking(datasets, access.team_ids(request.user, access.RESEARCH)),
    )


@researcher_required
@require_GET
def imports_progress(request: HttpRequest, kind: str) -> HttpResponseBase:
    if kind not in ROW_TEMPLATES:
        return JsonResponse({"detail": f"unknown kind {kind!r}; one of {', '.join(ROW_TEMPLATES)}"}, status=400)
    rows = queries.imports_by_id(kind, polled_ids(request), scope=_teams_datasets(request))
    return progress_json(request, rows, ROW_TEMPLATES[kind], "run")


def _teams_datasets(request: HttpRequest) -> Scope:
    """Imports into the user's teams' datasets: another team's is as unknown as a missing one."""
    return Scope.of_teams(access.figure_teams(request.user))


def _last_choices(request: HttpRequest) -> dict[str, str]:
    """The premise form's last choices, so that the form is not reset after each upload."""
    return {name: request.GET.get(name, "train" if name == "split" else "") for name in PREMISE_CHOICES}


def _with_last_choices(request: HttpRequest) -> str:
    chosen = {name: request.POST.get(name, "").strip() for name in PREMISE_CHOICES}
    return f"{reverse('dashboard:imports')}?{urlencode(chosen)}"


@researcher_required(post_permission=IMPORT_DATA)
@require_POST
def assign_dataset_splits(request: HttpRequest) -> HttpResponseBase:
    """`manage.py assign_splits` from the imports page: every premise of the dataset gets a split,
    per genre; premises already written on keep theirs (collection.splits)."""
    slug = request.POST.get("dataset", "")
    # The user's team's dataset only (teams.access): another team's answers as an unknown one.
    access.checked(dataset_named(slug), request.user, access.RESEARCH, missing="No such dataset.")
    try:
        dev, test = int(request.POST.get("dev", "2000")), int(request.POST.get("test", "2000"))
        report = assign_splits(slug, dev=dev, test=test)
    except ValueError:
        messages.error(request, "Dev and test pairs per genre are whole numbers; no split moved.")
    except SplitAssignmentError as refused:
        messages.error(request, f"{refused} No split moved.")
    else:
        totals = report.totals()
        messages.success(
            request,
            f"Splits of {slug}: {totals['train']:,} premises in train, {totals['dev']:,} in dev, "
            f"{totals['test']:,} in test, {totals['']:,} without a split."
            + "".join(f" Note: {note}." for note in report.notes),
        )
    return redirect(f"{reverse('dashboard:imports')}?{urlencode({'dataset': slug})}")


@researcher_required(post_permission=IMPORT_DATA)
@require_POST
def mark_validation(request: HttpRequest) -> HttpResponseBase:
    """`manage.py mark_for_validation` from the imports page: dev and test pairs and a
    share (percent of train pairs) or a number of more train pairs, marked for validation labels."""
    slug = request.POST.get("dataset", "")
    # The user's team's dataset only (teams.access): another team's answers as an unknown one.
    dataset = access.checked(dataset_named(slug), request.user, access.RESEARCH, missing="No such dataset.")
    back = f"{reverse('dashboard:imports')}?{urlencode({'dataset': slug})}#mark-validation"
    share, more = request.POST.get("share", "").strip(), request.POST.get("count", "").strip()
    try:
        report = validation_services.mark_dataset_for_validation(
            dataset,
            fraction=float(share) / 100 if share and not more else None,
            count=int(more) if more else None,
            seed=int(request.POST.get("seed") or 0),
            dev_test=request.POST.get("dev_test") == "on",
            actor=request.user,
        )
    except ValueError:
        messages.error(request, "The share is a percent (0–100) and the count a whole number; nothing was marked.")
    except batch_claims.ValidationRefused as refused:
        messages.error(request, f"{refused.message} Nothing was marked.")
    else:
        now = report["already_marked"] + report["newly_marked"]
        messages.success(
            request,
            f"{slug}: {report['newly_marked']:,} train pairs newly marked for validation; {now:,} of "
            f"{report['train_pairs']:,} train pairs ({report['share_pct']} %) now need validation labels; "
            f"{report['dev_test']:,} dev/test pairs newly marked. Validation studies serve them from now on.",
        )
    return redirect(back)
