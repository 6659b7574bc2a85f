"""Authorship's models as the admin and the audit log show them to a researcher
(authorship/models.py): the evidence of a sentence by its field and flags (or that it has none), a
written sentence by its normalised text, a sense score to two decimals with its pair, a network
sighting by its worker and network."""

import pytest

from authorship.models import NetworkSighting, SenseScore, WritingEvidence, WrittenSentence

pytestmark = pytest.mark.django_db


def test_writing_evidence_reads_as_its_field_and_its_flags_or_none() -> None:
    flagged = WritingEvidence(field_name="hypothesis", flags=["pasted", "fast_typing"])
    assert str(flagged) == "hypothesis: pasted, fast_typing"
    assert str(WritingEvidence(field_name="hypothesis", flags=[])) == "hypothesis: no flags"


def test_the_other_authorship_rows_read_as_a_researcher_names_them() -> None:
    assert str(WrittenSentence(normalised="a dog runs")) == "a dog runs"
    assert str(SenseScore(similarity=0.12345, pair_id=8)) == "sense 0.12 of pair 8"
    assert str(NetworkSighting(worker_id=3, network="203.0.113.0/24")) == "3 from 203.0.113.0/24"
