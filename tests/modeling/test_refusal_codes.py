"""The API's 404 and 409 for a refused launch or snapshot come from the codes the services give
their errors (`modeling.refusals`), never from the words: a message reworded keeps its answer, and
words that read like "unknown" on an error of no code stay a 400."""

import pytest
from django.core.exceptions import ValidationError

from base.long_tasks import JobStatus
from modeling import refusals
from modeling.api.training_runs import _not_a_bad_request
from modeling.models import Snapshot
from modeling.training.services import LaunchRefused, validate_launch


@pytest.mark.parametrize(
    ("errors", "status"),
    [
        ({"snapshot": refusals.missing("No such snapshot here.")}, 404),
        ({"config": refusals.missing("That genre is not one of ours.")}, 404),
        ({"snapshot": refusals.not_ready("Snapshot 3 does not exist.")}, 409),
        ({"config": refusals.not_ready("unknown train_genre 'x'")}, 409),
        ({"snapshot": "Snapshot 3 does not exist."}, None),
        ({"config": "unknown train_genre 'x'"}, None),
        ({"snapshot": refusals.missing("gone"), "model": "Unknown model 'x'."}, None),
        ({"snapshot": refusals.missing("gone"), "config": refusals.not_ready("left out")}, None),
        ({"snapshot": refusals.not_ready("Not done."), "config": refusals.not_ready("No pairs.")}, 409),
    ],
    ids=[
        "missing",
        "missing-genre",
        "not-ready",
        "not-ready-genre",
        "words-404",
        "words-genre",
        "with-a-400",
        "mixed",
        "two-not-ready",
    ],
)
def test_a_launch_refusal_is_answered_by_its_errors_codes(errors, status):
    answer = _not_a_bad_request(LaunchRefused(errors))
    assert (answer.status_code if answer is not None else None) == status
    if answer is not None:
        messages = [str(error.message) for error in errors.values()]
        assert answer.data["detail"] == " ".join(messages)


def test_the_codes_of_a_refusal_are_read_from_every_field_and_from_a_plain_one():
    assert refusals.codes(ValidationError({"a": refusals.missing("x"), "b": [refusals.not_ready("y")]})) == {
        refusals.NOT_FOUND,
        refusals.NOT_READY,
    }
    assert refusals.codes(refusals.missing("x")) == {refusals.NOT_FOUND}
    assert refusals.missing("Gone.").messages == ["Gone."] and refusals.not_ready("Later.").messages == ["Later."]
    assert refusals.codes(ValidationError("x")) == {None}


@pytest.mark.django_db
def test_each_launch_refusal_about_the_snapshot_carries_its_code(settings, tmp_path):
    settings.SNAPSHOT_DIR = str(tmp_path)
    running = Snapshot.objects.create(datasets=[], status=JobStatus.RUNNING)
    done_without_files = Snapshot.objects.create(datasets=[], status=JobStatus.DONE)
    for named, code in (
        (999_999, refusals.NOT_FOUND),
        (running.pk, refusals.NOT_READY),
        (done_without_files.pk, refusals.NOT_READY),
        ("x", None),
    ):
        with pytest.raises(LaunchRefused) as refused:
            validate_launch(named, "majority")
        assert refusals.codes(refused.value) == {code}, named
