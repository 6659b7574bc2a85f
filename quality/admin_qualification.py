"""Admin for qualification tests (researchers only). Imported by QualityConfig.ready, beside
whatever `quality/admin.py` registers, so the two can grow apart without touching each other."""

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import ManyToManyField, QuerySet
from django.http import HttpRequest

from corpus.admin_base import ReadOnlyInline, RecordAdmin

from .models import QualificationAnswer, QualificationAttempt, QualificationTest, ReferenceLabel
from .qualification import pool_problem


class QualificationTestForm(forms.ModelForm[QualificationTest]):
    """Refuses a pool too small for the tries it serves (`qualification.pool_problem`), naming the sizes."""

    class Meta:
        model = QualificationTest
        fields = [
            "study",
            "items",
            "items_per_try",
            "pass_mark",
            "max_attempts",
            "grants_trusted",
            "instructions",
            "show_wrong_items_after_last_try",
        ]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        items, per_try = cleaned.get("items"), cleaned.get("items_per_try")
        if items is not None and per_try:
            problem = pool_problem(len(items), per_try)
            if problem:
                self.add_error("items", problem)
        return cleaned


@admin.register(QualificationTest)
class QualificationTestAdmin(admin.ModelAdmin[QualificationTest]):
    form = QualificationTestForm
    list_display = [
        "study",
        "item_count",
        "items_per_try",
        "pass_mark",
        "max_attempts",
        "grants_trusted",
        "attempt_count",
        "passed_count",
    ]
    list_select_related = ["study"]
    autocomplete_fields = []
    filter_horizontal = ["items"]
    search_fields = ["study__slug", "study__name"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[QualificationTest]:
        return super().get_queryset(request).prefetch_related("items")

    def formfield_for_manytomany(
        self, db_field: ManyToManyField[Any, Any], request: HttpRequest, **kwargs: Any
    ) -> forms.ModelMultipleChoiceField[Any] | None:
        if db_field.name == "items":  # each option names its pair: read them in the one statement
            kwargs["queryset"] = ReferenceLabel.objects.select_related("pair__dataset").order_by("pair__pair_id")
        return super().formfield_for_manytomany(db_field, request, **kwargs)

    @admin.display(description="pool")
    def item_count(self, test: QualificationTest) -> int:
        return len(test.items.all())

    @admin.display(description="tries")
    def attempt_count(self, test: QualificationTest) -> int:
        return test.attempts.count()

    @admin.display(description="passed")
    def passed_count(self, test: QualificationTest) -> int:
        return test.attempts.filter(passed=True).values("worker").distinct().count()


class AnswerInline(
    ReadOnlyInline[QualificationAnswer, QualificationAttempt],
    admin.TabularInline[QualificationAnswer, QualificationAttempt],
):
    model = QualificationAnswer
    fields = ("reference", "label", "is_correct")


@admin.register(QualificationAttempt)
class QualificationAttemptAdmin(RecordAdmin[QualificationAttempt]):
    """Tries are records: readable, never edited (a wrong test is fixed by changing the test)."""

    list_display = [
        "worker",
        "test",
        "number",
        "correct",
        "total",
        "score",
        "passed",
        "seconds",
        "device",
        "finished_at",
    ]
    list_filter = ["passed", "test"]
    list_select_related = ["worker", "test__study"]
    search_fields = ["worker__external_id", "worker__user__username"]
    inlines = [AnswerInline]
