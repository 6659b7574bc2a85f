"""Study setup on the dashboard: "New study" for every task kind with what a market
asks for, saved with the admin's rules, and a pre-launch check that says in words what would make
the study serve nothing or mislead (premises without a split, an empty pool, a pool that cannot fill
the places, no market key, an unreachable market, a qualification nobody can pass)."""

import html

import pytest
from django.urls import reverse
from django.utils import timezone

from crowd.models import ServingOrder, Study, StudyAccess, TaskKind
from dashboard.queries.prelaunch import BLOCK, WARN, launch_check
from markets.models import MarketConnection
from tests import factories

pytestmark = pytest.mark.django_db


def setup_post(dataset, **fields):
    return {
        "name": "Our writing",
        "slug": "our-writing",
        "task_kind": TaskKind.WRITING,
        "dataset": dataset.pk,
        "serving_order": ServingOrder.BALANCED,
        "planned_sessions": "6",
        "tasks_per_batch": "3",
        "estimated_minutes": "12",
        "maximum_minutes": "40",
        "claim_minutes": "15",
        "payment_per_task": "0.50",
        "bonus_currency": "GBP",
        "completion_code": "OURCODE",
        "completion_url": "https://app.prolific.com/submissions/complete?cc={code}",
        "typing_evidence_action": "hold",
        "catch_trial_share": "0",
        "bonus_per_catch_match": "0",
        "access": StudyAccess.OPEN,
        "is_active": "on",
        **fields,
    }


def levels(study, level):
    return [finding.what for finding in launch_check(study) if finding.level == level]


def test_new_study_offers_every_task_kind(client, researcher):
    client.force_login(researcher)
    page = client.get(reverse("dashboard:studies")).content.decode()
    assert 'id="new-study"' in page
    for value, _ in TaskKind.choices:
        assert f"?task_kind={value}" in page
    form = client.get(reverse("dashboard:study_new"), {"task_kind": "validation"}).content.decode()
    for name in (
        "planned_sessions",
        "estimated_minutes",
        "maximum_minutes",
        "claim_minutes",
        "serving_order",
        "typing_evidence_action",
        "catch_trial_share",
        "bonus_per_catch_match",
        "access",
        "pool_genres",
    ):
        assert f'id="field-{name}"' in form, name


def test_a_study_created_on_the_dashboard_opens_on_its_pre_launch_check(client, researcher):
    dataset = factories.dataset("ours", writings_per_premise=1)
    fiction = factories.genre("fiction")
    for _ in range(4):
        factories.premise(dataset, fiction, split="")
    client.force_login(researcher)
    response = client.post(reverse("dashboard:study_new"), setup_post(dataset, pool_genres=[fiction.pk]), follow=True)
    page = html.unescape(response.content.decode())
    study = Study.objects.get(slug="our-writing")
    assert (study.claim_minutes, study.estimated_minutes, study.maximum_minutes, study.planned_sessions) == (
        15,
        12,
        40,
        6,
    )
    assert study.typing_evidence_action == "hold" and list(study.pool_genres.all()) == [fiction]
    assert 'id="launch-check"' in page
    assert "None of the pool's 4 premises has a split" in page


def test_a_study_whose_form_is_wrong_is_not_saved_and_says_why(client, researcher):
    dataset = factories.dataset("ours")
    client.force_login(researcher)
    response = client.post(reverse("dashboard:study_new"), setup_post(dataset, claim_minutes="0"))
    assert response.status_code == 200 and not Study.objects.exists()
    assert 'id="field-claim_minutes"' in response.content.decode() and 'role="alert"' in response.content.decode()


def test_settings_change_keeps_the_link(client, researcher):
    dataset = factories.dataset("ours")
    client.force_login(researcher)
    client.post(reverse("dashboard:study_new"), setup_post(dataset))
    client.post(
        reverse("dashboard:study_settings", args=["our-writing"]),
        setup_post(dataset, slug="moved", claim_minutes="20"),
    )
    study = Study.objects.get()
    assert (study.slug, study.claim_minutes) == ("our-writing", 20)


def test_only_researchers_set_up_studies(client, make_worker):
    worker = make_worker()
    client.force_login(worker.user)
    response = client.get(reverse("dashboard:study_new"))
    assert response.status_code in (302, 403)


def writing_study(dataset, **fields):
    return Study.objects.create(
        slug="w",
        name="W",
        dataset=dataset,
        task_kind=TaskKind.WRITING,
        completion_code="C",
        completion_url="https://example.org/{code}",
        **fields,
    )


def test_the_check_names_a_pool_that_cannot_fill_the_places():
    dataset = factories.dataset("ours", writings_per_premise=1)
    fiction = factories.genre("fiction")
    for _ in range(5):
        factories.premise(dataset, fiction, split="train")
    study = writing_study(dataset, planned_sessions=6, tasks_per_batch=3)
    assert not levels(study, BLOCK)
    assert any("cannot fill the places" in what and "room for 5" in what for what in levels(study, WARN))


def test_the_check_blocks_a_validation_study_with_nothing_to_validate():
    dataset = factories.dataset("ours")
    study = Study.objects.create(
        slug="v", name="V", dataset=dataset, task_kind=TaskKind.VALIDATION, completion_code="C", catch_trial_share=0
    )
    assert any("waits for validation labels" in what for what in levels(study, BLOCK))


def test_the_check_names_no_market_key_and_an_unreachable_market(settings):
    dataset = factories.dataset("ours", writings_per_premise=1)
    factories.premise(dataset, factories.genre("fiction"), split="train")
    study = writing_study(dataset)
    assert any("No market is connected" in what for what in levels(study, WARN))
    settings.MARKET_CREDENTIALS_KEY = ""
    MarketConnection.objects.create(
        study=study,
        market="prolific",
        sealed_credentials="x",
        webhook_key="k",
        last_check="Prolific did not answer (connection refused).",
        last_checked_at=timezone.now(),
    )
    blocks = levels(study, BLOCK)
    assert any("No market key" in what for what in blocks)
    assert any("could not be reached" in what for what in blocks)


@pytest.mark.parametrize(
    ("ok", "line"), [(True, "Prolific answered: study ACTIVE."), (False, "Connected? no: refused.")]
)
def test_the_check_reads_whether_the_market_answered_not_the_words_of_its_line(settings, ok, line):
    settings.MARKET_CREDENTIALS_KEY = "a key"
    dataset = factories.dataset("ours", writings_per_premise=1)
    factories.premise(dataset, factories.genre("fiction"), split="train")
    study = writing_study(dataset)
    MarketConnection.objects.create(
        study=study,
        market="prolific",
        sealed_credentials="x",
        webhook_key="k",
        last_check_ok=ok,
        last_check=line,
        last_checked_at=timezone.now(),
    )
    unreachable = [what for what in levels(study, BLOCK) if "could not be reached" in what]
    assert unreachable == ([] if ok else [f"The market could not be reached when last tested: {line}"])


def test_the_check_blocks_a_qualified_study_without_a_test():
    dataset = factories.dataset("ours", writings_per_premise=1)
    factories.premise(dataset, factories.genre("fiction"), split="train")
    study = writing_study(dataset, access=StudyAccess.QUALIFIED)
    assert any("has none: nobody could qualify" in what for what in levels(study, BLOCK))


def test_a_study_owns_its_hold_rules_starting_from_the_servers(client, researcher, settings):
    """A study owns its hold rules: "More time", its warning and take-backs are set per study; a new study's form starts
    from the server's values, and a blank one follows them."""
    settings.NLI = {
        **settings.NLI,
        "HOLD_WARNING_MINUTES": 3,
        "HOLD_EXTENSIONS": 1,
        "HOLD_TAKE_BACKS": 2,
        "WRITING_CLAIM_MINUTES": 30,
        "VALIDATION_CLAIM_MINUTES": 20,
    }
    dataset = factories.dataset("ours")
    client.force_login(researcher)
    form = html.unescape(client.get(reverse("dashboard:study_new"), {"task_kind": "writing"}).content.decode())
    for name, value in (("hold_warning_minutes", "3.0"), ("hold_extensions", "1"), ("hold_take_backs", "2")):
        assert f'id="field-{name}"' in form, name
        assert f'name="{name}" value="{value}"' in form.replace('step="any" ', ""), name
    assert "The server's: 2." in form
    claim = form[form.index('id="field-claim_minutes"') :]
    assert "The server's: 30 minutes for writing, 20 for validation." in claim[: claim.index("</div>")]
    client.post(
        reverse("dashboard:study_new"),
        setup_post(dataset, hold_warning_minutes="5", hold_extensions="0", hold_take_backs=""),
    )
    study = Study.objects.get()
    assert (study.hold_warning_minutes, study.hold_extensions, study.hold_take_backs) == (5.0, 0, None)


def test_the_study_page_counts_what_is_left_in_the_pool_the_check_counts():
    """A study whose pool is one genre of its dataset: "still wanted" and the pre-launch check count
    the same premises (pairs), not the whole dataset's."""
    from dashboard.queries.study import what_is_left

    dataset = factories.dataset("ours", writings_per_premise=1)
    fiction, travel = factories.genre("fiction"), factories.genre("travel")
    for genre, count in ((fiction, 3), (travel, 2)):
        for _ in range(count):
            factories.premise(dataset, genre, split="train")
    study = writing_study(dataset, planned_sessions=6, tasks_per_batch=1)
    study.pool_genres.set([fiction])
    assert (what_is_left(study)["items"], what_is_left(study)["units"]) == (3, 3)
    assert any("room for 3" in what for what in levels(study, WARN))
    validation = Study.objects.create(
        slug="v", name="V", dataset=dataset, task_kind=TaskKind.VALIDATION, completion_code="C", catch_trial_share=0
    )
    validation.pool_genres.set([travel])
    for premise in dataset.premises.all():
        factories.pair(dataset, premise, ["entailment"], needs_validation=True)
    assert (what_is_left(validation)["items"], what_is_left(validation)["units"]) == (2, 8)


def test_the_market_findings_in_their_words_and_levels(settings):
    """No market: a warning naming the hand route; a connection never tested: a warning; no key to
    read its credentials: a block; a market that answered its last test: nothing more."""
    dataset = factories.dataset("ours", writings_per_premise=1)
    factories.premise(dataset, factories.genre("fiction"), split="train")
    study = writing_study(dataset)

    def market_findings():
        fresh = Study.objects.get(pk=study.pk)  # its connection read anew
        found = [(finding.level, finding.what) for finding in launch_check(fresh) if finding.level in (WARN, BLOCK)]
        return [(level, what) for level, what in found if "market" in what.lower()]

    assert market_findings() == [
        (
            WARN,
            "No market is connected: sessions are approved and bonuses paid by hand or from the bonus files "
            "(connect it on the markets page).",
        )
    ]
    settings.MARKET_CREDENTIALS_KEY = "a key"
    connection = MarketConnection.objects.create(
        study=study, market="prolific", sealed_credentials="x", webhook_key="k"
    )
    assert market_findings() == [
        (WARN, "The market connection was never tested: test it on the markets page."),
    ]
    settings.MARKET_CREDENTIALS_KEY = "  "
    MarketConnection.objects.filter(pk=connection.pk).update(last_check_ok=True, last_checked_at=timezone.now())
    assert market_findings() == [
        (
            BLOCK,
            "No market key: MARKET_CREDENTIALS_KEY is not set, so the server cannot read the market's "
            "credentials (nothing can be approved or paid through it).",
        )
    ]
    settings.MARKET_CREDENTIALS_KEY = "a key"
    assert market_findings() == []
