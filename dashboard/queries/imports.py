"""The imports page: recent premise and corpus imports with their progress and reports."""

from django.db.models import QuerySet

from collection.models import PremiseImport
from importers.models import CorpusImport

IMPORTS_SHOWN = 30


def recent_premise_imports(limit: int = IMPORTS_SHOWN) -> list[PremiseImport]:
    return list(PremiseImport.objects.select_related("dataset", "genre").order_by("-started_at", "-pk")[:limit])


def recent_corpus_imports(limit: int = IMPORTS_SHOWN) -> list[CorpusImport]:
    return list(CorpusImport.objects.select_related("dataset").order_by("-started_at", "-pk")[:limit])


def imports_by_id(kind: str, ids: list[int]) -> QuerySet[PremiseImport] | QuerySet[CorpusImport]:
    if kind == "premises":
        return PremiseImport.objects.filter(pk__in=ids).select_related("dataset", "genre")
    return CorpusImport.objects.filter(pk__in=ids).select_related("dataset")
