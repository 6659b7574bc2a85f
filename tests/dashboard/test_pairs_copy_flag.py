"""The Pairs page's copy flag: the pairs whose hypothesis the writing submit judged a near-copy of an
earlier sentence, read from the typing records' flags (their index), and still flagged when the
sentence they copied has left."""

from django.urls import reverse

from corpus.models import Pair
from tests.authorship.test_copies import TEMPLATES, holding_study, visit, write
from tests.collection.writing_helpers import add_premises, writing_setup


def test_the_copy_flag_keeps_the_copies_whose_first_sentences_left(db, make_worker, client, researcher) -> None:
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 12)
    study = holding_study(dataset, tasks=1)
    writers = [make_worker(username=f"farm-{n}") for n in range(3)]
    for n, writer in enumerate(writers):
        write(writer, visit(study, writer, f"farm-{n}"), TEMPLATES[0])
    client.force_login(researcher)

    def flagged() -> str:
        return client.get(reverse("dashboard:pairs"), {"dataset": dataset.slug, "flag": "copy"}).content.decode()

    assert "Send 6 pairs to adjudication" in flagged()  # the two later writers' three each
    Pair.objects.filter(author=writers[0]).delete()  # the sentences they copied leave
    assert "Send 6 pairs to adjudication" in flagged()
