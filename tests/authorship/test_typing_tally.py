"""The typing tally follows its records: what the writing submit records is counted in the same
transaction, and a record deleted with its pair, on its own or with its writer leaves it, so the
maintained sums always equal a fresh count of the records (the tallies' check finds no drift)."""

from authorship import typing_tally
from authorship.models import TypingTally, WritingEvidence
from authorship.selectors import typing_flags_by_worker
from corpus import tallies
from corpus.models import Pair
from tests.authorship.test_researcher_views import write_with_one_pasted
from tests.collection.writing_helpers import add_premises, writing_setup


def drift():
    return tallies.check_and_rebuild(None, typing_tally.TALLY, repair=False).keys


def test_a_writing_submit_is_counted_in_its_own_transaction(make_worker):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 1)
    writer = make_worker(username="paster")
    write_with_one_pasted(writer)
    assert sum(TypingTally.objects.values_list("n", flat=True)) == 3
    assert typing_flags_by_worker([writer.pk])[writer.pk] == {"written": 3, "flagged": 1, "no_evidence": 0}
    assert drift() == 0


def test_a_record_leaves_the_tally_with_its_pair_alone_or_with_its_writer(make_worker):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 3)
    writer, other = make_worker(username="paster"), make_worker(username="other")
    write_with_one_pasted(writer)
    write_with_one_pasted(writer)
    write_with_one_pasted(other)
    before = typing_flags_by_worker([writer.pk])[writer.pk]
    assert before["written"] == 6
    Pair.objects.filter(pk=WritingEvidence.objects.filter(worker=writer, flagged=True).values("pair_id")[:1]).delete()
    after_pair = typing_flags_by_worker([writer.pk])[writer.pk]
    assert (after_pair["written"], after_pair["flagged"]) == (5, before["flagged"] - 1)
    WritingEvidence.objects.filter(worker=writer, flagged=False)[0].delete()
    after_record = typing_flags_by_worker([writer.pk])[writer.pk]
    assert (after_record["written"], after_record["flagged"]) == (4, before["flagged"] - 1)
    assert drift() == 0
    other.delete()
    assert typing_flags_by_worker([other.pk]) == {}
    assert drift() == 0
