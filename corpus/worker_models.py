"""The people behind labels, models of the corpus app (corpus.models names them): each worker, and
the teams' decisions that a worker's answers count nowhere in their data."""

from django.conf import settings
from django.db import models
from django.db.models import Q


class Market(models.TextChoices):
    LOCAL = "local", "account on this site"
    PROLIFIC = "prolific", "Prolific"
    MTURK = "mturk", "Mechanical Turk"


class Worker(models.Model):
    """Whoever writes or labels pairs. Every worker has a Django user; market arrivals have no usable password.

    The row lives in the core because every pair and label names its worker, and whether a
    worker's labels count (`WorkerExclusion`, a team's decision) is part of the gold rule; how
    workers arrive is `crowd`'s. Workers are shared by the teams: a person may work for several labs.
    """

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="worker")
    market = models.CharField(max_length=10, choices=Market.choices, default=Market.LOCAL)
    external_id = models.CharField(max_length=128, blank=True, help_text="PROLIFIC_PID or MTurk workerId.")
    is_trusted = models.BooleanField(default=False, help_text="In the closed pool of trusted validators.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "collection_worker"
        ordering = ["id"]
        # The researcher's rights (base/permissions.py); they sit on the worker because
        # researchers act on workers: who counts, who is paid.
        permissions = [
            ("use_research_tools", "Can use the research dashboard, API and admin"),
            ("exclude_worker", "Can exclude workers' labels or include them again"),
            ("pay_bonus", "Can record bonus payments"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["market", "external_id"], condition=~Q(external_id=""), name="unique_market_worker"
            )
        ]

    def __str__(self) -> str:
        return self.named(self.external_id, self.user.get_username())

    @staticmethod
    def named(external_id: str, username: str) -> str:
        """How a worker is named (`str`), from the two columns: for pages that read plain rows."""
        return external_id or username


class WorkerExclusion(models.Model):
    """A team's decision that a worker's answers on its datasets count nowhere (worker quality, SNLI
    §2.2): their labels there leave gold labels, statistics and snapshots (`ValidationLabel.excluded`
    follows it, `corpus.exclusions.set_workers_excluded`), and they take no more of its tasks. Another
    team's data is not touched: a worker excluded by one lab may go on labelling for another."""

    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="exclusions")
    team = models.ForeignKey("teams.Team", on_delete=models.CASCADE, related_name="worker_exclusions")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["worker", "team"], name="one_exclusion_per_worker_team")]
        indexes = [models.Index(fields=["team", "worker"], name="exclusion_team_worker")]

    def __str__(self) -> str:
        return f"{self.worker} excluded in team {self.team_id}"
