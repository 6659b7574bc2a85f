"""What an erasure leaves behind: that it happened, for whom (a keyed hash of the id, never the
id) and what it removed, so the snapshot page can list the erasures since each released snapshot."""

from django.conf import settings
from django.db import models


class ErasureRecord(models.Model):
    team = models.ForeignKey("teams.Team", on_delete=models.PROTECT, related_name="+")
    # HMAC of the market id (privacy.services.pseudonym): the same request twice shows as one person.
    subject_hash = models.CharField(max_length=80, db_index=True)
    policy = models.CharField(max_length=6, help_text="The studies' policy applied to the contributions.")
    counts = models.JSONField(default=dict, help_text="What was removed or rewritten, by register entry.")
    erased_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"erasure {self.pk} of {self.subject_hash[:12]} in team {self.team_id}"
