"""A study's information sheet (versioned), each visit's answer to it, and withdrawals (docs/consent.md).
A sheet is never edited in place: a change is a new version, so what a participant agreed to stays
readable exactly as they read it."""

from django.db import models

from crowd.models import ContributionsOnWithdrawal


class InformationSheet(models.Model):
    """One version of a study's information sheet and its consent statements."""

    study = models.ForeignKey("crowd.Study", on_delete=models.CASCADE, related_name="information_sheets")
    version = models.PositiveIntegerField()
    # Markdown, rendered with raw HTML escaped (consent.rendering): the lab writes it, participants read it.
    text = models.TextField()
    # What a participant agrees to, each shown beside the agree button: a list of sentences.
    statements = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey("auth.User", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")

    class Meta:
        ordering = ["study", "-version"]
        constraints = [models.UniqueConstraint(fields=["study", "version"], name="unique_sheet_version")]

    def __str__(self) -> str:
        return f"information sheet v{self.version} of study {self.study_id}"


class ConsentAnswer(models.TextChoices):
    AGREED = "agreed", "agreed"
    DECLINED = "declined", "declined"


class ConsentDecision(models.Model):
    """A visit's answer to the sheet it was shown: which version, agreed or declined, and when.
    One per visit: a decline is final for the visit (it is never given a task)."""

    study_session = models.OneToOneField("crowd.StudySession", on_delete=models.CASCADE, related_name="consent")
    # PROTECT: the version a participant answered must outlive any edit of the study's sheet.
    sheet = models.ForeignKey(InformationSheet, on_delete=models.PROTECT, related_name="decisions")
    answer = models.CharField(max_length=10, choices=ConsentAnswer.choices)
    decided_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"session {self.study_session_id} {self.answer} to sheet v{self.sheet.version}"


class RemovalState(models.TextChoices):
    """Where the removal of a withdrawn participant's contributions stands."""

    NOT_ASKED = "not asked", "kept (the study keeps contributions)"
    WAITING = "waiting", "waiting for the removal engine"
    DONE = "done", "removed"


class Withdrawal(models.Model):
    """A participant withdrew from a study in one visit: the state record of it (the visit is closed too)."""

    study_session = models.OneToOneField("crowd.StudySession", on_delete=models.CASCADE, related_name="withdrawal")
    withdrawn_at = models.DateTimeField()
    # The study's policy when they withdrew: a later change of the study does not reach back.
    policy = models.CharField(max_length=10, choices=ContributionsOnWithdrawal.choices)
    claims_released = models.PositiveIntegerField(default=0)
    removal = models.CharField(max_length=10, choices=RemovalState.choices)
    removal_note = models.CharField(max_length=300, blank=True)
    removed_at = models.DateTimeField(null=True, blank=True)
    # What the market was told, or why not (no market call withdraws a participant).
    market_note = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["-withdrawn_at"]

    def __str__(self) -> str:
        return f"withdrawal of session {self.study_session_id}"
