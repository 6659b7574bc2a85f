"""The admin bases and helpers the apps' admins share: records the code writes (listed, never added or
edited by hand), read-only inlines and change lists, and short text for list columns."""

from typing import Any, TypeVar

from django.contrib import admin
from django.contrib.admin.utils import flatten
from django.db.models import Model
from django.http import HttpRequest
from django.utils.text import Truncator

from .models import ImportRun


def short(text: str, *, words: int = 14) -> str:
    return Truncator(text).words(words)


RunT = TypeVar("RunT", bound=ImportRun)
ModelT = TypeVar("ModelT", bound=Model)
ChildT = TypeVar("ChildT", bound=Model)
ParentT = TypeVar("ParentT", bound=Model)


class RecordAdmin(admin.ModelAdmin[ModelT]):
    """Rows the code writes (records of what happened): listed and deletable, never added or
    edited by hand."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: ModelT | None = None) -> bool:
        return False


class ImportRunAdmin(RecordAdmin[RunT]):
    """Read-only: import rows are written by the import commands as they run."""

    @admin.display(description="read")
    def percent_read(self, obj: RunT) -> str:
        return f"{100 * obj.progress:.0f}%"


class ReadOnlyInline(admin.options.InlineModelAdmin[ChildT, ParentT]):
    """An inline that shows rows and never adds, edits or deletes them (they move counters or
    record history, so they change only through corpus.services or an import). Listed before
    TabularInline or StackedInline among the bases."""

    extra = 0
    can_delete = False
    max_num: int | None = 0

    def get_readonly_fields(self, request: HttpRequest, obj: ParentT | None = None) -> list[str]:
        return flatten(self.fields or ())

    def has_add_permission(self, request: HttpRequest, obj: ParentT | None = None) -> bool:
        return False


class ReadOnlyAdmin(RecordAdmin[ModelT]):
    """A change list that shows rows and never adds, edits or deletes them."""

    def has_delete_permission(self, request: HttpRequest, obj: ModelT | None = None) -> bool:
        return False
