"""What every dashboard page shares: researcher-only access and the dataset/split selector."""

from collections.abc import Callable, Collection, Iterable, Mapping
from functools import update_wrapper
from typing import Any, Concatenate, ParamSpec, TypeVar, cast, overload
from urllib.parse import urlencode

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.utils.http import url_has_allowed_host_and_scheme

from base.authenticated import AuthenticatedRequest
from base.permissions import is_researcher
from corpus.models import Split
from corpus.scope import Scope as CorpusScope
from dashboard.queries.common import datasets
from teams import access

P = ParamSpec("P")
T = TypeVar("T")
View = Callable[Concatenate[HttpRequest, P], HttpResponseBase]
# The view behind the check: only signed-in researchers reach it, so its request.user is an account.
ResearcherView = Callable[Concatenate[AuthenticatedRequest, P], HttpResponseBase]


@overload
def researcher_required(view: ResearcherView[P], *, post_permission: str | None = None) -> View[P]: ...
@overload
def researcher_required(
    view: None = None, *, post_permission: str | None = None
) -> Callable[[ResearcherView[P]], View[P]]: ...
def researcher_required(
    view: ResearcherView[P] | None = None, *, post_permission: str | None = None
) -> Callable[..., object]:  # the overloads above say which
    """Anonymous visitors go to the login page; logged-in workers get 403. With `post_permission`,
    a POST (the page's action: paying, excluding, labelling, launching) also needs that permission."""
    if view is None:

        def decorate(view: ResearcherView[P]) -> View[P]:
            return researcher_required(view, post_permission=post_permission)

        return decorate

    def wrapped(request: HttpRequest, *args: P.args, **kwargs: P.kwargs) -> HttpResponseBase:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not is_researcher(request.user):
            raise PermissionDenied("The dashboard is for researchers.")
        if post_permission and request.method == "POST" and not request.user.has_perm(post_permission):
            raise PermissionDenied(f"This action needs the permission {post_permission}; ask an administrator.")
        return view(cast(AuthenticatedRequest, request), *args, **kwargs)

    update_wrapper(wrapped, view)  # functools.wraps: the view's name and docstring
    return wrapped


def found(row: T | None, missing: str) -> T:
    """The row a page names, or the 404 that says what is missing."""
    if row is None:
        raise Http404(missing)
    return row


def redirect_back(request: HttpRequest, default: str) -> HttpResponseBase:
    """Back to the page the form came from (its `next`, on this site only), else to `default`."""
    back = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        back = default
    return redirect(back)


class Scope:
    """The dataset and split a page is narrowed to (?dataset=slug&split=dev); unknown values mean all."""

    def __init__(self, request: HttpRequest, with_split: bool = True, params: Mapping[str, str] | None = None) -> None:
        # `params`: where the choice is read from (a form's POST carries the page's), else the query string.
        params = request.GET if params is None else params
        # The user's teams' datasets only (teams.access): another team's slug is as unknown as a typo.
        self.teams = access.figure_teams(request.user)
        every_dataset = datasets()
        self.datasets = access.in_teams(every_dataset, self.teams)
        slug = params.get("dataset", "")
        self.dataset = next((d for d in self.datasets if d.slug == slug), None)
        # Whether they are every dataset there is: then no figure looks up which dataset a row is of.
        self.within_datasets = [self.dataset] if self.dataset else self.datasets
        self.holds_every_dataset = len(self.within_datasets) == len(every_dataset)
        split = params.get("split", "")
        self.with_split = with_split
        self.splits = [choice.value for choice in Split]
        self.split = split if with_split and split in self.splits else None
        # What the page's figures add up, built once for every selector the page asks.
        self.within = CorpusScope.figures_of(self.dataset, self.teams, self.split)
        # Every dataset of the user's teams, a dataset chosen or not, every split: figures of shared
        # workers that are not kept per dataset (typing, copies) are of the teams' studies and pairs.
        self.teams_within = CorpusScope.of_teams(self.teams)
        # A page whose scope has no split reads `split` as a filter of its own, and says what it ignores.
        checked = ((slug, self.dataset), (split, self.split)) if with_split else ((slug, self.dataset),)
        self.unknown = [value for value, known in checked if value and not known]

    def query(self) -> str:
        parts: list[str] = []
        if self.dataset:
            parts.append(f"dataset={self.dataset.slug}")
        if self.split:
            parts.append(f"split={self.split}")
        return "&".join(parts)

    @property
    def label(self) -> str:
        dataset = self.dataset.slug if self.dataset else "all datasets"
        return f"{dataset}, {self.split}" if self.split else dataset


def render_page(
    request: HttpRequest, template: str, active: str, scope: Scope | None = None, *, status: int = 200, **extra: object
) -> HttpResponse:
    """A dashboard page: `template` with its sub-nav tab (`active`), its scope and `extra`."""
    # The dataset/split choice travels along the sub-nav, so moving between pages keeps it.
    kept = {key: request.GET[key] for key in ("dataset", "split") if request.GET.get(key)}
    context = {"active": active, "scope": scope, "scope_query": ("?" + urlencode(kept)) if kept else "", **extra}
    return render(request, template, context, status=status)


def polled_ids(request: HttpRequest) -> list[int]:
    """The ids a list page polls for (`?ids=1,2,3`; anything but digits left out)."""
    return [int(value) for value in request.GET.get("ids", "").split(",") if value.strip().isdigit()]


def progress_json(
    request: HttpRequest, rows: Iterable[Any], template: str, name: str, finished: Collection[str] = ("done", "failed")
) -> JsonResponse:
    """Each job's status and progress, and its row re-rendered (`template` with the row as `name`)."""
    return JsonResponse(
        {
            "items": [
                {
                    "id": row.pk,
                    "status": row.status,
                    "progress": row.progress,
                    "finished": row.status in finished,
                    "html": render_to_string(template, {name: row}, request),
                }
                for row in rows
            ]
        }
    )
