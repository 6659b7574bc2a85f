"""The sentence tally follows the written sentences: what a writing submit writes is counted in the
same transaction, and a sentence deleted with its pair, on its own, with its writer or its study
session leaves the sums equal to a fresh count (the tallies' check finds no drift). The workers
page's copies figures read the tally, and the sentences only by their keys, so their cost does not
grow with the written corpus."""

from django.db import connection
from django.test.utils import CaptureQueriesContext

from authorship import selectors, sentence_tally
from authorship.models import SentenceTally, WrittenSentence
from corpus import tallies
from corpus.models import Dataset, Pair, Worker
from corpus.scope import Scope
from crowd.models import StudySession
from teams.models import Team
from tests import factories
from tests.authorship.test_copies import TEMPLATES, holding_study, visit, write
from tests.collection.writing_helpers import add_premises, make_study, writing_setup


def drift() -> int:
    return tallies.check_and_rebuild(None, sentence_tally.TALLY, repair=False).keys


def copies_of(writer: Worker) -> tuple[int, int, int, int] | None:
    """(sentences, copies of others, own repeats, sessions) of a writer with copies, else None."""
    for row in selectors.copies_by_writer():
        if row["worker_id"] == writer.pk:
            return row["written"], row["of_others"], row["own_repeats"], row["sessions"]
    return None


def farm(make_worker):
    """Three writers each writing the same page in their own session of a study: the first's
    sentences are the groups' first, the other two copy them."""
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 12)
    study = holding_study(dataset, tasks=1)
    writers = [make_worker(username=f"farm-{n}") for n in range(3)]
    for n, writer in enumerate(writers):
        write(writer, visit(study, writer, f"farm-{n}"), TEMPLATES[0])
    return writers


def test_a_writing_submit_is_counted_in_its_own_transaction(make_worker) -> None:
    first, second, third = farm(make_worker)
    assert sum(SentenceTally.objects.values_list("n", flat=True)) == 9
    assert copies_of(first) is None  # the first to write them copied nobody
    assert copies_of(second) == (3, 3, 0, 1)
    assert copies_of(third) == (3, 3, 0, 1)
    clusters = selectors.copy_clusters()
    assert [cluster["sentences"] for cluster in clusters] == [3, 3, 3]
    assert {cluster["text"] for cluster in clusters} == set(TEMPLATES[0].values())
    assert all(len(cluster["writers"]) == 3 for cluster in clusters)
    assert drift() == 0


def test_a_copy_stays_a_copy_when_the_sentence_it_copied_leaves(make_worker) -> None:
    _first, second, third = farm(make_worker)
    root = WrittenSentence.objects.filter(worker=second).order_by("pk")[0].cluster_root
    assert root is not None
    Pair.objects.filter(pk=root.pair_id).delete()  # a group's first sentence leaves with its pair
    assert copies_of(second) == (3, 3, 0, 1)  # whose sentence it copied is kept with the copy
    groups = selectors.copy_clusters()
    assert len(groups) == 2 and root.pk not in [group["root"] for group in groups]  # that group ended
    assert drift() == 0
    WrittenSentence.objects.filter(worker=third).order_by("pk")[0].delete()  # a copy on its own
    assert copies_of(third) == (2, 2, 0, 1)
    assert drift() == 0


def test_a_sentence_leaves_with_its_writer_and_stays_without_its_session(make_worker) -> None:
    first, second, third = farm(make_worker)
    StudySession.objects.filter(worker=second).delete()
    assert copies_of(second) == (3, 3, 0, 0)  # still written, in no session now
    assert drift() == 0
    third.delete()
    assert copies_of(third) is None
    assert all(len(cluster["writers"]) == 2 for cluster in selectors.copy_clusters())
    assert drift() == 0
    first.delete()  # the groups' first sentences: the groups end, the copies stay copies
    assert selectors.copy_clusters() == []
    assert copies_of(second) == (3, 3, 0, 0)
    assert drift() == 0


def written(
    dataset: Dataset,
    worker: Worker,
    *,
    copy_of: WrittenSentence | None = None,
    session: StudySession | None = None,
) -> WrittenSentence:
    """A written sentence of `dataset`, counted as the writing submit counts it."""
    pair = factories.pair(dataset, factories.premise(dataset), ["entailment"], author=worker)
    sentence = WrittenSentence.objects.create(
        pair=pair,
        premise_id=pair.premise_id,
        dataset=dataset,
        worker=worker,
        study_session=session,
        normalised=pair.hypothesis.lower(),
        copy_of=copy_of,
        copies_other_writer=None if copy_of is None else copy_of.worker_id != worker.pk,
        cluster_root=None if copy_of is None else WrittenSentence.objects.get(pk=copy_of.cluster_root_id or copy_of.pk),
    )
    sentence_tally.recorded([sentence])
    return sentence


def test_a_team_sees_its_own_copies_and_a_group_first_written_elsewhere_by_its_earliest_copy(make_worker) -> None:
    ours = factories.dataset("ours", team=Team.objects.create(slug="ours", name="Ours"))
    theirs = factories.dataset("theirs", team=Team.objects.create(slug="theirs", name="Theirs"))
    author, copier, outsider = make_worker(username="author"), make_worker(username="copier"), make_worker()
    first = written(theirs, author)
    earliest = written(ours, copier, copy_of=first)
    written(ours, copier, copy_of=first)
    written(theirs, outsider, copy_of=first)
    # Rewritten (an indexed column, so the row and its index entries move), the earliest copy now
    # lies after the later one: the earliest is still the group's first of the team.
    WrittenSentence.objects.filter(pk=earliest.pk).update(normalised=earliest.normalised + " again")
    team = Scope.of_teams([ours.team_id])
    (group,) = selectors.copy_clusters(team)
    assert group["root"] == first.pk
    assert group["text"] == earliest.pair.hypothesis  # the first sentence is the other team's
    assert group["writers"] == [{"worker_id": copier.pk, "writer": "copier", "sentences": 2, "sessions": 0}]
    assert [row["worker_id"] for row in selectors.copies_by_writer(team)] == [copier.pk]
    (everyone,) = selectors.copy_clusters()
    assert everyone["text"] == first.pair.hypothesis and everyone["sentences"] == 4
    assert {writer["worker_id"] for writer in everyone["writers"]} == {author.pk, copier.pk, outsider.pk}


def test_the_copies_figures_read_written_sentences_only_by_their_keys(make_worker) -> None:
    farm(make_worker)
    with CaptureQueriesContext(connection) as captured:
        selectors.copies_by_writer()
        selectors.copy_clusters()
    reads = [query["sql"] for query in captured.captured_queries if '"authorship_writtensentence"' in query["sql"]]
    assert reads, "the groups' first sentences are read"
    assert all('"authorship_writtensentence"."id" IN' in sql for sql in reads), reads


def test_a_teams_first_sentences_are_read_by_their_keys_alone_and_kept_when_the_teams(make_worker) -> None:
    """With statistics older than the sentences, the keys beside the team's datasets were planned
    as a read of the datasets' whole index: the ids are asked alone, the team of the rows read."""
    ours = factories.dataset("keys-ours", team=Team.objects.create(slug="keys-ours", name="Ours"))
    theirs = factories.dataset("keys-theirs", team=Team.objects.create(slug="keys-theirs", name="Theirs"))
    author, copier = make_worker(username="keys-author"), make_worker(username="keys-copier")
    ours_first = written(ours, author)
    written(ours, copier, copy_of=ours_first)
    theirs_first = written(theirs, copier)
    written(theirs, author, copy_of=theirs_first)
    written(ours, author, copy_of=theirs_first)
    team = Scope.of_teams([ours.team_id])

    with CaptureQueriesContext(connection) as captured:
        groups = selectors.copy_clusters(team)

    by_key = [
        query["sql"] for query in captured.captured_queries if '"authorship_writtensentence"."id" IN' in query["sql"]
    ]
    assert len(by_key) == 1, by_key
    # Asked of nothing but the ids: no datasets joined, no dataset condition.
    assert '"collection_dataset"' not in by_key[0], by_key
    assert '"dataset_id"' not in by_key[0].split(" WHERE ", 1)[1], by_key
    # Their first sentence is not named; its group stands by its earliest copy in our dataset.
    texts = {group["root"]: group["text"] for group in groups}
    assert texts[ours_first.pk] == ours_first.pair.hypothesis
    assert texts[theirs_first.pk] != theirs_first.pair.hypothesis
    assert {writer["worker_id"] for writer in next(g for g in groups if g["root"] == theirs_first.pk)["writers"]} == {
        author.pk
    }


def test_a_groups_writers_are_summed_over_their_sessions_named_as_the_page_names_them(
    make_worker, django_user_model
) -> None:
    dataset = factories.dataset("groups")
    nameless = make_worker(username="nameless")
    django_user_model.objects.filter(pk=nameless.user_id).update(username="")
    copier = make_worker(username="copier", market="prolific", external_id="EXT-9")
    leaver = make_worker(username="leaver")
    study = make_study(dataset, slug="groups-study")
    visits = [StudySession.objects.create(study=study, worker=copier, external_session_id=f"v{n}") for n in (1, 2)]
    own = [StudySession.objects.create(study=study, worker=nameless, external_session_id=f"o{n}") for n in (1, 2)]
    first = written(dataset, nameless, session=own[0])
    for visit_ in visits:
        written(dataset, copier, copy_of=first, session=visit_)
    written(dataset, nameless, copy_of=first, session=own[1])  # the first writer repeats it later
    written(dataset, leaver, copy_of=first).delete()  # its delta and its removal, not folded yet
    (group,) = selectors.copy_clusters(Scope.of_dataset(dataset))
    assert group["sentences"] == 4
    assert group["writers"] == [
        {"worker_id": nameless.pk, "writer": f"worker {nameless.pk}", "sentences": 2, "sessions": 2},
        {"worker_id": copier.pk, "writer": "EXT-9", "sentences": 2, "sessions": 2},
    ]  # as many sentences: the lower id first


def test_a_rebuild_of_one_dataset_counts_only_its_sentences(make_worker) -> None:
    ours, theirs = factories.dataset("ours-only"), factories.dataset("theirs-too")
    writer = make_worker(username="writer")
    first = written(ours, writer)
    written(ours, make_worker(username="copier"), copy_of=first)
    written(theirs, writer)
    counted = sentence_tally.fresh_counts(ours)
    assert {key[0] for key in counted} == {ours.pk} and sum(counted.values()) == 2
    assert sum(sentence_tally.fresh_counts().values()) == 3


def test_a_writer_with_one_copy_or_one_own_repeat_is_ranked_with_none_of_the_other_kind(make_worker) -> None:
    dataset = factories.dataset("ones")
    study = make_study(dataset, slug="ones-study")
    once, repeater = make_worker(username="once"), make_worker(username="repeater")
    visits = [StudySession.objects.create(study=study, worker=repeater, external_session_id=f"r{n}") for n in (1, 2)]
    first = written(dataset, make_worker(username="author"))
    written(dataset, once, copy_of=first, session=StudySession.objects.create(study=study, worker=once))
    written(dataset, repeater, copy_of=written(dataset, repeater, session=visits[0]), session=visits[1])

    def row(writer: Worker, written: int, of_others: int, own_repeats: int, sessions: int) -> dict[str, object]:
        return {
            "worker_id": writer.pk,
            "writer": writer.user.username,
            "written": written,
            "of_others": of_others,
            "own_repeats": own_repeats,
            "sessions": sessions,
        }

    assert selectors.copies_by_writer(Scope.of_dataset(dataset)) == [
        row(once, 1, 1, 0, 1),
        row(repeater, 2, 0, 1, 2),
    ]
