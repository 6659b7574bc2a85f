"""Where a study that refuses pasted text draws its lines: a field set by a
script is refused as a pasted one is; a typing record over its size limit is not read at all (so a
page that sends one has no record); "most of the text" means more than half, exactly half is not."""

import json

import pytest
from django.core.exceptions import ValidationError

from authorship.evidence import MAX_EVIDENCE_CHARS, FieldEvidence, read_evidence
from authorship.judgements import Flag, field_flags
from authorship.services import NO_RECORD_MESSAGE, REFUSED_MESSAGE
from corpus.models import Pair
from crowd.models import TypingEvidenceAction
from tests.authorship import records
from tests.authorship.test_writing_evidence import SENTENCES, session_of, write

pytestmark = pytest.mark.django_db


@pytest.fixture
def refusing(db, make_worker):
    from tests.collection.writing_helpers import add_premises, writing_setup

    dataset, genre = writing_setup()
    add_premises(dataset, genre, 3)
    worker = make_worker()
    return worker, session_of(dataset, worker, TypingEvidenceAction.REFUSE_PASTE)


def page(**override):
    fields = {name: records.typed(text) for name, text in SENTENCES.items()}
    fields.update(override)
    return records.page(fields)


def test_a_field_set_by_a_script_is_refused_like_a_pasted_one(refusing):
    worker, session = refusing
    scripted = {"u": len(SENTENCES["neutral"])}  # input events no trusted keystroke produced
    with pytest.raises(ValidationError) as refused:
        write(worker, session, page(neutral=scripted))
    assert refused.value.message_dict == {"neutral": [REFUSED_MESSAGE]}
    assert not Pair.objects.exists()


def test_a_typing_record_over_its_size_limit_is_not_read(refusing):
    record = page()
    padded = record[:-1] + " " * (MAX_EVIDENCE_CHARS - len(record)) + "}"
    assert len(padded) == MAX_EVIDENCE_CHARS and read_evidence(padded, SENTENCES) is not None
    too_long = padded[:-1] + " }"
    assert json.loads(too_long) and read_evidence(too_long, SENTENCES) is None
    worker, session = refusing
    with pytest.raises(ValidationError) as refused:
        write(worker, session, too_long)
    assert {messages[0] for messages in refused.value.message_dict.values()} == {NO_RECORD_MESSAGE}


@pytest.mark.parametrize("pasted, flagged", [(5, False), (6, True)])
def test_most_of_the_text_is_more_than_half(pasted, flagged):
    text = "A dog ran."  # 10 characters
    typed = 10 - pasted
    # The typed rest has a typing record that adds up (keys, intervals, their times), as a person's.
    record = {"typed": typed, "keystrokes": typed, "intervals": typed - 1, "typing_ms": 230 * (typed - 1)}
    keyed = {**record, "interval_mean_ms": 230.0}
    assert (Flag.PASTED in field_flags(FieldEvidence(pasted=pasted, **keyed), text)) is flagged
    assert (Flag.NOT_TYPED in field_flags(FieldEvidence(untrusted=pasted, **keyed), text)) is flagged
