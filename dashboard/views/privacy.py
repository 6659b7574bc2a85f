"""Participants' data (docs/privacy.md): find a participant of the user's teams by market id,
download what is held about them, erase them; the erasures since each snapshot. The work is
`privacy.services`'; the team rules are `teams.access`'."""

import json

from django.contrib import messages
from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_POST

from corpus.models import Worker
from privacy.selectors import erasures_since, erasures_since_each_snapshot, find_participant
from privacy.services import ParticipantNotFound, download_participant_data, erase_participant
from teams import access

from .common import render_page, researcher_required

SNAPSHOTS_SHOWN = 20


def _found(request: HttpRequest, market_id: str, action: str) -> tuple[Worker, int] | None:
    return find_participant(market_id, access.team_ids(request.user, action))


@researcher_required
@require_GET
def privacy_page(request: HttpRequest) -> HttpResponseBase:
    market_id = request.GET.get("market_id", "").strip()
    found = _found(request, market_id, access.RESEARCH) if market_id else None
    teams = access.team_ids(request.user)
    return render_page(
        request,
        "dashboard/privacy.html",
        "privacy",
        market_id=market_id,
        searched=bool(market_id),
        participant=found[0] if found else None,
        team_id=found[1] if found else None,
        since_each=erasures_since_each_snapshot(teams, SNAPSHOTS_SHOWN),
        erasures=erasures_since(teams, None)[:50],
    )


@researcher_required
@require_GET
def participant_download(request: HttpRequest) -> HttpResponseBase:
    found = _found(request, request.GET.get("market_id", "").strip(), access.EXPORT)
    if found is None:
        return HttpResponse("No participant of your teams has this id.", status=404, content_type="text/plain")
    worker, team_id = found
    data = download_participant_data(worker, team_id=team_id, by=request.user)
    response = HttpResponse(json.dumps(data, cls=DjangoJSONEncoder, indent=2), content_type="application/json")
    response["Content-Disposition"] = 'attachment; filename="participant-data.json"'
    return response


@researcher_required
@require_POST
def participant_erase(request: HttpRequest) -> HttpResponseBase:
    market_id = request.POST.get("market_id", "").strip()
    if request.POST.get("confirm") != market_id or not market_id:
        messages.error(request, "Type the participant's id again to confirm the erasure; nothing was erased.")
        return redirect("dashboard:privacy")
    found = _found(request, market_id, access.RESEARCH)
    if found is None:
        messages.error(request, "No participant of your teams has this id; nothing was erased.")
        return redirect("dashboard:privacy")
    worker, team_id = found
    try:
        record = erase_participant(worker, team_id=team_id, by=request.user, reason=request.POST.get("reason", ""))
    except ParticipantNotFound as refusal:
        messages.error(request, str(refusal))
        return redirect("dashboard:privacy")
    messages.success(request, f"Erased: now {record.subject_hash}; contributions: {record.policy}.")
    return redirect("dashboard:privacy")
