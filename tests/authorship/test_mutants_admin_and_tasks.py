"""The authorship app's AppConfig.ready at the edges mutmut found unguarded: the tallies' delete
receivers, each wired once for its own model under its own name (Django may call ready() more than
once). The admin's `flag_list` and the Celery task `score_sense` are decorated, so mutmut makes no
mutant of them."""

from django.db.models.signals import pre_delete

from authorship.models import WritingEvidence, WrittenSentence
from tests.quality.test_mutants_admin_and_tasks import ready_again


def test_the_authorship_apps_ready_wires_each_tallys_delete_receiver_once_for_its_model():
    """Fails if a tally's delete receiver is wired for every model or twice: a deleted row counted out twice."""
    (before,), (after,) = ready_again("authorship", pre_delete)
    assert after == before
    assert ("authorship.typing_tally", id(WritingEvidence)) in after
    assert ("authorship.sentence_tally", id(WrittenSentence)) in after
