"""The study pages: every study with its sessions, and one page per study; the sessions as a CSV.
Every figure is read in `dashboard.queries.study`."""

from collections.abc import Iterator

from django.contrib import messages
from django.http import HttpRequest, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods

from base import spreadsheet_safe
from base.permissions import CHANGE_STUDY
from crowd.models import Study, TaskKind
from dashboard.forms import StudySetupForm, save_study
from dashboard.queries import study as queries
from dashboard.queries.prelaunch import launch_check
from teams import access
from validation.selectors import study_catch_shortfall

from .common import render_page, researcher_required


def study_or_404(request: HttpRequest, slug: str, action: str = access.VIEW) -> Study:
    """The study `slug` of one of the user's teams where their role may do `action` (teams.access):
    a foreign study answers as an unknown one, 404."""
    return access.checked(queries.study(slug), request.user, action, missing="No such study.")


@researcher_required
def studies(request: HttpRequest) -> HttpResponseBase:
    return render_page(
        request,
        "dashboard/studies.html",
        "studies",
        studies=queries.studies_with_counts(request.user),
        task_kinds=TaskKind.choices,
    )


@researcher_required(post_permission=CHANGE_STUDY)
@require_http_methods(["GET", "POST"])
def study_setup(request: HttpRequest, slug: str | None = None) -> HttpResponseBase:
    """A new study (`slug` None) or a study's settings; saved, its page opens on its pre-launch check."""
    study = None if slug is None else study_or_404(request, slug, access.RESEARCH)
    if request.method == "POST":
        form = StudySetupForm(request.POST, instance=study, user=request.user)
        if form.is_valid():
            saved = save_study(form, request.user)
            messages.success(request, f"“{saved.name}” is saved. Read its pre-launch check below before you launch it.")
            return redirect("dashboard:study", slug=saved.slug)
    else:
        initial = {"task_kind": request.GET.get("task_kind", "")} if study is None else {}
        form = StudySetupForm(instance=study, initial=initial, user=request.user)
    return render_page(request, "dashboard/study_form.html", "studies", form=form, study=study)


@researcher_required
def study_page(request: HttpRequest, slug: str) -> HttpResponseBase:
    study = study_or_404(request, slug)
    shortfall = study_catch_shortfall(study)
    figures = queries.overview(study)
    return render_page(
        request,
        "dashboard/study.html",
        "studies",
        study=study,
        catch_shortfall=shortfall,
        launch_check=launch_check(study, shortfall, sheet=figures["consent"].sheet, wanted=figures["left"]),
        **figures,
    )


class _Echo:
    """A file-like object whose write returns the line, for csv.writer into a streamed response."""

    def write(self, value: str) -> str:
        return value


@researcher_required
def study_sessions_csv(request: HttpRequest, slug: str) -> HttpResponseBase:
    study = study_or_404(request, slug, access.EXPORT)
    writer = spreadsheet_safe.writer(_Echo())

    def lines() -> Iterator[str]:
        yield writer.writerow(queries.SESSION_CSV_COLUMNS)
        for row in queries.session_rows(study):
            yield writer.writerow(row)

    response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-sessions.csv"'
    return response
