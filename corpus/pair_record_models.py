"""What is kept beside a pair, models of the corpus app (corpus.models names them): where an
imported or recast pair came from, and workers' judgments of whether its hypothesis reads as English."""

from django.db import models
from django.db.models import Q


class PairProvenance(models.Model):
    """Where an imported or recast pair came from (DNC's metadata, Poliak et al. 2018 §3).

    The columns are what the admin shows and filters on; `data_record` and `metadata_record` keep
    the source's own JSON objects as text (key order included: jsonb would sort it), so a DNC
    export gives the released files back exactly. Context, hypothesis and label are not repeated
    there: they come from the premise, the pair and its author label row.
    """

    pair = models.OneToOneField("corpus.Pair", on_delete=models.CASCADE, related_name="provenance", primary_key=True)
    corpus = models.CharField(max_length=200, blank=True, db_index=True)
    corpus_sent_id = models.CharField(max_length=300, blank=True)
    corpus_license = models.CharField(max_length=300, blank=True)
    creation_approach = models.CharField(max_length=50, blank=True)
    type_of_inference = models.CharField(max_length=100, blank=True, db_index=True)
    source = models.CharField(max_length=255, blank=True, help_text="File (or template) the pair came from.")
    json_style = models.CharField(
        max_length=10, blank=True, help_text="python2 / python3: how the source file laid out its JSON."
    )
    data_record = models.TextField(
        blank=True, help_text="The source's data object, without context, hypothesis and label."
    )
    metadata_record = models.TextField(blank=True, help_text="The source's metadata object (empty when it had none).")

    class Meta:
        verbose_name_plural = "pair provenance"

    def __str__(self) -> str:
        return f"{self.corpus} {self.corpus_sent_id}"


class Grammaticality(models.TextChoices):
    NONE = "none", "no grammatical errors"
    MINOR = "minor", "minor grammatical issues"
    MAJOR = "major", "major grammatical issues"


class GrammaticalityJudgment(models.Model):
    """A worker's judgment of a hypothesis on its own (DNC Appendix B.4): none / minor / major issues.

    Snapshots can leave out pairs whose hypothesis most judges found to have major issues.
    """

    pair = models.ForeignKey("corpus.Pair", on_delete=models.CASCADE, related_name="grammaticality_judgments")
    worker = models.ForeignKey(
        "corpus.Worker", on_delete=models.SET_NULL, null=True, blank=True, related_name="grammaticality_judgments"
    )
    judgment = models.CharField(max_length=5, choices=Grammaticality.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pair_id", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["pair", "worker"], condition=Q(worker__isnull=False), name="one_grammaticality_per_worker"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.pair_id}: {self.judgment}"
