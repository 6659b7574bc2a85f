"""What a new lab still trips on: the bonus form names participants as the pages do, the study
page tells owed from approved from paid, imports report whole errors, the typing-evidence flag
filter, the writing rules on the New study form, and stranded participants."""

import logging.config
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone
from django.utils.log import DEFAULT_LOGGING

from authorship.models import WritingEvidence
from collection.models import PremiseImport
from collection.premise_import import import_premises
from collection.writing_rules import TaskRules, hypothesis_problem
from corpus.scope import Scope
from crowd.models import Study, StudySession, TaskKind
from dashboard.queries.pairs import PairFilters, matching_pairs
from importers.models import CorpusImport
from importers.services import import_pairs_file
from markets.models import ReviewDecision, ReviewState, SessionReview
from quality.bonuses import DISCRETIONARY_REASON
from quality.models import BonusEntry, BonusKind
from tests.collection.writing_helpers import add_premises, make_study, writing_setup
from tests.dashboard.test_study_setup import setup_post

from . import cost_factories

pytestmark = pytest.mark.django_db
PROLIFIC_VISIT = {"PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1e", "STUDY_ID": "60aa11bb22cc", "SESSION_ID": "sess-001"}
E = cost_factories.E


# --- a discretionary bonus: to a participant the pages name -----------------------------------


@pytest.fixture
def validation_study():
    _ds, _writing, validation, _pairs = cost_factories.build("bonus-give")
    return validation


def given_bonuses(study):
    return BonusEntry.objects.filter(study=study, kind=BonusKind.EARNED, reason__startswith=DISCRETIONARY_REASON)


def test_the_bonus_form_lists_the_studys_participants_by_the_ids_the_pages_show(client, researcher, validation_study):
    client.force_login(researcher)
    page = client.get(reverse("dashboard:bonuses"), {"study": validation_study.slug}).content.decode()
    form = page.split('id="give-form"', 1)[1].split("</form>", 1)[0]
    for visit in StudySession.objects.filter(study=validation_study).select_related("worker__user"):
        assert f'<option value="{visit.pk}">{visit.worker} · session {visit.external_session_id}' in form
    assert 'inputmode="numeric"' not in form  # no bare number to find elsewhere


def test_the_bonus_form_lists_the_latest_sessions_and_a_session_left_out_is_given_by_its_typed_id(
    client, researcher, validation_study, monkeypatch
):
    """The list is sized by what it shows, not by the crowd: the latest sessions, with how many there
    are, and any other participant by the id typed beside it."""
    from django.core.cache import cache

    from dashboard.queries import quality as quality_queries

    monkeypatch.setattr(quality_queries, "RECIPIENTS_SHOWN", 2)
    cache.clear()
    client.force_login(researcher)
    sessions = list(StudySession.objects.filter(study=validation_study, is_preview=False).order_by("started_at", "pk"))
    assert len(sessions) > 2
    page = client.get(reverse("dashboard:bonuses"), {"study": validation_study.slug}).content.decode()
    form = page.split('id="give-form"', 1)[1].split("</form>", 1)[0]
    listed = {visit.pk for visit in sessions if f'<option value="{visit.pk}">' in form}
    assert listed == {visit.pk for visit in sessions[-2:]}
    assert f"the latest 2 of {len(sessions)} participants: type any other's id" in form
    oldest = sessions[0]
    client.post(
        reverse("dashboard:bonus_give", args=[validation_study.slug]),
        {"session": "", "participant": oldest.external_session_id, "amount": "0.20", "reason": "an early helper"},
    )
    (given,) = given_bonuses(validation_study)
    assert given.study_session_id == oldest.pk


def test_a_bonus_goes_to_the_participant_chosen_from_the_list(client, researcher, validation_study):
    client.force_login(researcher)
    bob = StudySession.objects.get(study=validation_study, worker__user__username="bob")
    client.post(
        reverse("dashboard:bonus_give", args=[validation_study.slug]),
        {"session": str(bob.pk), "amount": "0.75", "reason": "careful work"},
    )
    (given,) = given_bonuses(validation_study)
    assert (given.study_session_id, given.amount) == (bob.pk, Decimal("0.75"))


@pytest.mark.parametrize("typed", ["carol", "bonus-give-validation-{carol}"])
def test_a_bonus_goes_to_the_participant_or_session_id_typed_as_the_pages_show_it(
    client, researcher, validation_study, typed
):
    client.force_login(researcher)
    carol = StudySession.objects.get(study=validation_study, worker__user__username="carol")
    typed = typed.replace("bonus-give-validation-{carol}", carol.external_session_id)
    client.post(
        reverse("dashboard:bonus_give", args=[validation_study.slug]),
        {"session": "", "participant": f" {typed} ", "amount": "1", "reason": "a problem on our side"},
    )
    (given,) = given_bonuses(validation_study)
    assert given.study_session_id == carol.pk


def test_a_typed_id_of_no_session_or_of_two_sessions_gives_nothing_and_says_why(client, researcher, validation_study):
    client.force_login(researcher)
    bob = StudySession.objects.get(study=validation_study, worker__user__username="bob")
    cost_factories.session(validation_study, bob.worker, 1, name="bob-again")
    url = reverse("dashboard:bonus_give", args=[validation_study.slug])
    nobody = client.post(url, {"participant": "nobody", "amount": "1", "reason": "r"}, follow=True)
    twice = client.post(url, {"participant": "bob", "amount": "1", "reason": "r"}, follow=True)
    assert "No session of this study has the participant id or session id “nobody”" in nobody.content.decode()
    assert "“bob” came to this study 2 times: choose the session from the list" in twice.content.decode()
    assert not given_bonuses(validation_study).exists()


# --- the study page's money: owed, approved and paid are three figures ------------------------


def money_study():
    """A writing study at 1.50 GBP a task, no market connected: one session completed with 2 tasks,
    one still running with 1 task done."""
    ds = cost_factories.factories.dataset("money")
    study = cost_factories.study("money", ds, TaskKind.WRITING, "1.50")
    done = cost_factories.session(study, cost_factories.factories.worker("done"), 2)
    StudySession.objects.filter(pk=done.pk).update(completed_at=timezone.now())
    cost_factories.session(study, cost_factories.factories.worker("running"), 1)
    return study, done


def figure(html, stat):
    return html.split(f'id="{stat}" data-value="', 1)[1].split('"', 1)[0]


def test_with_no_market_and_nothing_approved_the_study_page_says_nothing_was_paid(client, researcher):
    study, _done = money_study()
    client.force_login(researcher)
    html = client.get(reverse("dashboard:study", args=[study.slug])).content.decode()
    assert figure(html, "stat-spent") == "0.00" and figure(html, "stat-tasks-paid") == "0.00"
    # The completed session's 2 tasks are owed; the running session's task is owed by no one yet.
    assert figure(html, "stat-tasks-owed") == "3.00" and figure(html, "stat-owed") == "3.00"
    assert figure(html, "stat-tasks-running") == "1"
    assert 'id="no-market-note"' in html


def test_an_approval_sent_to_the_market_is_approved_and_its_confirmation_is_paid(client, researcher):
    study, done = money_study()
    client.force_login(researcher)
    review = SessionReview.objects.create(study_session=done, decision=ReviewDecision.APPROVE)
    html = client.get(reverse("dashboard:study", args=[study.slug])).content.decode()
    assert (figure(html, "stat-tasks-owed"), figure(html, "stat-tasks-approved")) == ("0.00", "3.00")
    assert figure(html, "stat-spent") == "0.00"
    SessionReview.objects.filter(pk=review.pk).update(state=ReviewState.CONFIRMED)
    html = client.get(reverse("dashboard:study", args=[study.slug])).content.decode()
    assert (figure(html, "stat-tasks-approved"), figure(html, "stat-tasks-paid")) == ("0.00", "3.00")
    assert figure(html, "stat-spent") == "3.00"


# --- the Pairs page's typing flag: typing evidence only, not a repeated sentence ----------------


def test_the_typing_flag_finds_untyped_sentences_and_not_hand_typed_ones_only_repeated(client, researcher):
    ds = cost_factories.factories.dataset("typing-flag")
    genre = cost_factories.factories.genre("fiction")
    writer = cost_factories.factories.worker("writer")
    pairs = {}
    for name, flags in (("pasted", ["pasted"]), ("repeated", ["repeated"]), ("clean", [])):
        premise = cost_factories.factories.premise(ds, genre, "dev", f"A premise for the {name} sentence.")
        pairs[name] = cost_factories.factories.pair(ds, premise, f"The {name} sentence.", [E], author=writer)
        WritingEvidence.objects.create(
            pair=pairs[name], worker=writer, field_name="entailment", flags=flags, flagged=bool(flags)
        )
    assert set(matching_pairs(Scope.of_dataset(ds), PairFilters(flag="typing"))) == {pairs["pasted"]}
    assert set(matching_pairs(Scope.of_dataset(ds), PairFilters(flag="repeated"))) == {pairs["repeated"]}
    client.force_login(researcher)
    page = client.get(reverse("dashboard:pairs"), {"dataset": ds.slug, "flag": "repeated"}).content.decode()
    assert "The repeated sentence." in page and "The pasted sentence." not in page


# --- import reports: the JSON error whole, and the malformed lines on the collection page ------


def test_an_import_reports_a_broken_json_line_as_a_whole_sentence(tmp_path):
    path = tmp_path / "pairs_dev.jsonl"
    path.write_text('{"sentence1": "A man walks.", "sentence2": "unterminated', encoding="utf-8")
    report = import_pairs_file(path, "whole-errors", genre="fiction")
    ((line, why),) = report.malformed
    # The decoder's bare message ends "… starting at": the report says where.
    assert (line, why) == (1, "not valid JSON (Unterminated string starting at column 44)")
    premises = tmp_path / "premises.jsonl"
    premises.write_text('{"text": "A man walks."}\n{"text": "broken', encoding="utf-8")
    premise_report = import_premises([premises], "fiction", "whole-premises", file_format="jsonl")
    assert premise_report.malformed == [("premises.jsonl", 2, "not JSON (Unterminated string starting at column 10)")]


def test_the_collection_pages_import_list_names_the_malformed_lines(client, researcher):
    ds = cost_factories.factories.dataset("imported")
    genre = cost_factories.factories.genre("fiction")
    CorpusImport.objects.create(
        dataset=ds, source="pairs_dev.jsonl", split="dev", malformed_count=2, problems=[[3, "no labels"], [9, "bad"]]
    )
    PremiseImport.objects.create(
        dataset=ds,
        genre=genre,
        source="premises.jsonl",
        malformed=["premises.jsonl line 4: not JSON (Expecting value at column 1)"],
    )
    client.force_login(researcher)
    page = client.get(reverse("dashboard:collection"), {"dataset": ds.slug}).content.decode()
    imports = page.split('id="table-imports"', 1)[1].split("</table>", 1)[0]
    assert "<li>line 3: no labels</li>" in imports and "<li>line 9: bad</li>" in imports
    assert "<li>premises.jsonl line 4: not JSON (Expecting value at column 1)</li>" in imports
    assert "1 malformed lines" in imports


# --- the New study form sets the writing rules; "at least 1 word" ------------------------------


def test_a_new_study_sets_its_writing_rules_on_the_dashboard_form(client, researcher):
    dataset = cost_factories.factories.dataset("rules")
    client.force_login(researcher)
    form = client.get(reverse("dashboard:study_new")).content.decode()
    for name in (
        "min_hypothesis_words",
        "max_hypothesis_sentences",
        "reports_to_hold_premise",
        "max_reports_per_batch",
    ):
        assert f'name="{name}"' in form
    assert 'name="auto_exclude_flagged"' in form
    rules = {
        "min_hypothesis_words": "1",
        "max_hypothesis_sentences": "2",
        "reports_to_hold_premise": "3",
        "max_reports_per_batch": "4",
        "auto_exclude_flagged": "on",
    }
    client.post(reverse("dashboard:study_new"), setup_post(dataset, **rules))
    study = Study.objects.get(slug="our-writing")
    assert (study.min_hypothesis_words, study.max_hypothesis_sentences) == (1, 2)
    assert (study.reports_to_hold_premise, study.max_reports_per_batch, study.auto_exclude_flagged) == (3, 4, True)


def test_a_writing_rule_left_blank_keeps_the_studys_value(client, researcher):
    dataset = cost_factories.factories.dataset("rules")
    client.force_login(researcher)
    client.post(reverse("dashboard:study_new"), setup_post(dataset, min_hypothesis_words=""))
    assert Study.objects.get(slug="our-writing").min_hypothesis_words == 3  # the model's default


def test_the_writing_page_says_at_least_1_word_not_1_words(client):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 2)
    study = make_study(dataset, min_hypothesis_words=1)
    client.get(reverse("study_entry", args=[study.slug]), PROLIFIC_VISIT)
    page = client.get(client.get(reverse("writing_next"))["Location"]).content.decode()
    assert "Each sentence: at least 1 word, at most" in page
    problem = hypothesis_problem("A man walks.", "42 17", TaskRules(min_hypothesis_words=1))
    assert problem == "Please write a whole sentence of at least 1 word."


# --- stranded participants: the pool runs out mid-visit ---------------------------------------


def stranded_visit(client, **study_fields):
    """A writing study of 4 tasks a visit whose pool holds 2 lines (one writing each): the
    participant writes both, then asks for a third."""
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 2)
    # Paid, without a market connection: an open link (crowd.arrival refuses a paid study's unverified ids).
    study = make_study(
        dataset, tasks_per_batch=4, payment_per_task=Decimal("0.50"), open_link_unverified=True, **study_fields
    )
    client.get(reverse("study_entry", args=[study.slug]), PROLIFIC_VISIT)
    for _ in range(2):
        task_url = client.get(reverse("writing_next"))["Location"]
        assert client.post(task_url, GOOD_SENTENCES).status_code == 302
    return study, client.get(reverse("writing_next"))


GOOD_SENTENCES = {
    "entailment": "A boat departed early in the morning.",
    "neutral": "The boat carried tourists to an island.",
    "contradiction": "The boat never left the harbour.",
}


def test_a_participant_whose_pool_ran_out_is_given_the_partial_completion_code(client, researcher):
    study, page = stranded_visit(
        client,
        partial_completion_code="PARTIAL1",
        completion_url="https://app.prolific.com/submissions/complete?cc={code}",
    )
    text = page.content.decode()
    assert "You did 2 of the 4 tasks" in text and "try again" not in text and "come back later" not in text
    assert "<code>PARTIAL1</code>" in text
    assert 'href="https://app.prolific.com/submissions/complete?cc=PARTIAL1"' in text
    visit = StudySession.objects.get(study=study)
    assert visit.stranded_at is not None and visit.completed_at is None and not visit.completion_code
    client.force_login(researcher)
    html = client.get(reverse("dashboard:study", args=[study.slug])).content.decode()
    assert '<tr data-step="stranded">' in html
    funnel = html.split('id="table-funnel"', 1)[1]
    assert funnel.split('data-step="stranded"', 1)[1].split('data-value="', 1)[1].startswith("1")
    assert funnel.split('data-step="in_progress"', 1)[1].split('data-value="', 1)[1].startswith("0")
    # Its two tasks are owed (paid in part through the code), not running.
    assert figure(html, "stat-tasks-owed") == "1.00" and figure(html, "stat-tasks-stranded") == "2"


def test_without_a_partial_code_a_stranded_participant_is_asked_to_return_the_study(client, researcher):
    study, page = stranded_visit(client)
    text = page.content.decode()
    assert "You did 2 of the 4 tasks" in text and "return the study on the market" in text
    assert 'id="partial-code"' not in text
    client.force_login(researcher)
    html = client.get(reverse("dashboard:study", args=[study.slug])).content.decode()
    # Asked to return: the market pays nothing, so nothing is owed.
    assert figure(html, "stat-tasks-owed") == "0.00" and figure(html, "stat-tasks-stranded") == "2"
    assert "asked to return the study" in html


def test_a_participant_who_did_no_task_yet_is_not_stranded(client):
    dataset, _genre = writing_setup()
    study = make_study(dataset, tasks_per_batch=4, partial_completion_code="PARTIAL1")
    client.get(reverse("study_entry", args=[study.slug]), PROLIFIC_VISIT)
    text = client.get(reverse("writing_next")).content.decode()
    assert 'id="stranded"' not in text
    assert StudySession.objects.get(study=study).stranded_at is None


def test_a_validator_whose_pool_ran_out_after_2_of_4_batches_is_told_so_with_the_code(client):
    study = Study.objects.create(
        slug="ran-out",
        name="Ran out",
        dataset=cost_factories.factories.dataset("ran-out"),
        task_kind=TaskKind.VALIDATION,
        tasks_per_batch=4,
        completion_code="RANOUT",
        partial_completion_code="PARTIAL2",
    )
    client.get(reverse("study_entry", args=[study.slug]), PROLIFIC_VISIT)
    StudySession.objects.filter(study=study).update(tasks_done=2)  # two batches done, then none left
    text = client.get(reverse("validation:next")).content.decode()
    assert "You did 2 of the 4 tasks" in text and "<code>PARTIAL2</code>" in text
    assert "try again in a little while" not in text
    assert StudySession.objects.get(study=study).stranded_at is not None


# --- make demo's console: runserver's lines once ----------------------------------------------


def handlers_printing(record):
    """The handlers `logging` hands the record to, as Logger.callHandlers walks them: the logger's
    and its ancestors' (until one does not propagate), each taking it by its level and filters."""
    logger: logging.Logger | None
    logger, taking = logging.getLogger(record.name), []
    while logger:
        taking += [h for h in logger.handlers if record.levelno >= h.level and h.filter(record)]
        logger = logger.parent if logger.propagate else None
    return taking


def test_a_django_info_line_is_printed_once_with_debug_on(settings):
    """runserver's autoreloader says "Watching for file changes" at INFO through Django's logger:
    Django's console handler prints it (DEBUG on), and the root's handler must not print it again
    (the site's logging as configured at start: DEFAULT_LOGGING, then settings.LOGGING)."""
    settings.DEBUG = True
    logging.config.dictConfig(DEFAULT_LOGGING)
    logging.config.dictConfig(settings.LOGGING)
    record = logging.LogRecord("django.utils.autoreload", logging.INFO, __file__, 1, "Watching", None, None)
    assert len(handlers_printing(record)) == 1
    warning = logging.LogRecord("django.request", logging.WARNING, __file__, 1, "Not Found", None, None)
    assert len(handlers_printing(warning)) >= 1  # warnings are still printed
