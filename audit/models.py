"""The audit log: one append-only row per researcher decision (docs/teams.md).

An entry names its team, actor and subject by id and by a label copied at the time, never by a
foreign key: deleting a study, a user or a team changes nothing here, and no cascade or SET NULL
can rewrite a past entry. `save` refuses to change a stored entry and `delete` refuses always; the
database refuses too (a trigger, migration 0001), so not even a queryset update gets through.
"""

from typing import Any

from django.db import models


class AuditEntry(models.Model):
    at = models.DateTimeField(auto_now_add=True, db_index=True)
    team_id = models.BigIntegerField(null=True, blank=True, db_index=True, help_text="The team it concerns.")
    actor_id = models.BigIntegerField(null=True, blank=True, help_text="Who decided (a user's id).")
    actor = models.CharField(max_length=150, blank=True, help_text="Their username at the time.")
    action = models.CharField(max_length=60, db_index=True, help_text="e.g. study.settings, worker.excluded.")
    subject_type = models.CharField(max_length=60, help_text="e.g. crowd.study, corpus.pair.")
    subject_id = models.CharField(max_length=64, blank=True)
    subject = models.CharField(max_length=200, blank=True, help_text="What it was called at the time.")
    before = models.JSONField(default=dict, blank=True)
    after = models.JSONField(default=dict, blank=True)
    reason = models.TextField(blank=True)
    dataset_slugs = models.JSONField(default=list, blank=True, help_text="The datasets whose data it touched.")

    class Meta:
        ordering = ["-at", "-id"]
        verbose_name_plural = "audit entries"

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.actor or 'system'} {self.action} {self.subject}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None:
            raise PermissionError("The audit log is append-only: an entry is never changed.")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        raise PermissionError("The audit log is append-only: an entry is never deleted.")
