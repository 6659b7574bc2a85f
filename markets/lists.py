"""The market's lists: qualified and excluded workers (Prolific participant groups, MTurk
qualification types)."""

from typing import Any

from corpus.models import Market, Worker
from corpus.selectors import excluded_in
from quality.models import QualificationAttempt

from .clients import MarketError
from .clients.prolific import ProlificClient
from .connections import client_for
from .models import ConnectedMarket, ListEntry, ListKind, MarketConnection

# --- lists -----------------------------------------------------------------------------------


def sync_lists(connection: MarketConnection, *, by: Any = None) -> str:
    """Put workers who passed the study's qualification test on the qualified list and excluded
    workers on the excluded list (a Prolific participant group, an MTurk qualification type), once
    each: the market then keeps them in or out of later studies."""
    study = connection.study
    market = Market.PROLIFIC if connection.market == ConnectedMarket.PROLIFIC else Market.MTURK
    excluded = excluded_in([study.dataset.team_id])  # the study's team's exclusions, no other team's
    wanted = {
        ListKind.QUALIFIED: (
            connection.qualified_list_id,
            Worker.objects.filter(
                pk__in=QualificationAttempt.objects.filter(test__study=study, passed=True).values("worker_id")
            ).exclude(pk__in=excluded.values("worker_id")),
        ),
        ListKind.EXCLUDED: (
            connection.excluded_list_id,
            Worker.objects.filter(pk__in=excluded.values("worker_id"), study_sessions__study=study),
        ),
    }
    client = client_for(connection, by)
    lines = []
    for kind, (list_id, workers) in wanted.items():
        if not list_id:
            continue
        new = list(
            workers.filter(market=market)
            .exclude(external_id="")
            .exclude(market_list_entries__connection=connection, market_list_entries__kind=kind)
            .distinct()
            .order_by("pk")
        )
        if not new:
            lines.append(f"{kind}: nobody new")
            continue
        try:
            if isinstance(client, ProlificClient):
                client.add_to_group(list_id, [w.external_id for w in new])
            else:
                for worker in new:
                    client.qualify(list_id, worker.external_id)
        except MarketError as error:
            lines.append(f"{kind}: {error}")
            continue
        ListEntry.objects.bulk_create(
            [ListEntry(connection=connection, worker=w, kind=kind) for w in new], ignore_conflicts=True
        )
        lines.append(f"{kind}: {len(new)} added")
    return "; ".join(lines) or "No list ids are set for this connection."
