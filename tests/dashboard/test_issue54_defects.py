"""The smaller defects a new team hit, one test each, numbered as the defects were reported."""

import re
import subprocess
from decimal import Decimal

import pytest
from django.urls import reverse

from corpus.models import Label, Split
from crowd.models import Study, StudySession, TaskKind
from markets.models import MarketConnection
from quality.models import BonusCause, BonusEntry, BonusKind, ReferenceLabel
from tests import factories

pytestmark = pytest.mark.django_db
REPO = __import__("pathlib").Path(__file__).resolve().parents[2]


def study_named(slug, dataset, **fields):
    return Study.objects.create(slug=slug, name=slug, dataset=dataset, completion_code="C", **fields)


def test_defect_8_bonuses_of_a_study_without_bonuses_are_not_another_studys(client, researcher, make_worker):
    dataset = factories.dataset("bonus")
    paying, quiet = study_named("paying", dataset), study_named("quiet", dataset)
    worker = make_worker()
    session = StudySession.objects.create(study=paying, worker=worker, external_session_id="s")
    BonusEntry.objects.create(
        kind=BonusKind.EARNED,
        worker=worker,
        study=paying,
        study_session=session,
        amount=Decimal("1.00"),
        currency="USD",
        cause=BonusCause.OTHER,
        reason="catch trial matched in study paying",
    )
    client.force_login(researcher)
    response = client.get(reverse("dashboard:bonuses"), {"study": quiet.slug})
    page = response.content.decode()
    assert response.context["study"] is None and 'id="no-bonuses"' in page
    assert reverse("dashboard:bonus_pay", args=[paying.slug]) not in page


def test_defect_15_qualification_items_name_their_pair():
    dataset = factories.dataset("qual")
    pair = factories.pair(
        dataset, factories.premise(dataset, split=Split.DEV), [Label.NEUTRAL], hypothesis="A man waits for a bus."
    )
    reference = ReferenceLabel.objects.create(pair=pair, label=Label.NEUTRAL)
    assert str(reference) == f"{pair.pair_id} (qual): “A man waits for a bus.” → neutral"


def test_defect_18_a_preview_submit_never_says_saved(client, researcher):
    dataset = factories.dataset("prev", writings_per_premise=1)
    factories.premise(dataset, split=Split.TRAIN)
    study = study_named("prev", dataset, task_kind=TaskKind.WRITING)
    client.force_login(researcher)
    response = client.post(reverse("study_preview_start", args=[study.slug]), follow=True)
    task_url = response.redirect_chain[-1][0]
    posted = client.post(
        task_url,
        {
            "entailment": "A boat departed early in the morning.",
            "neutral": "The boat carried tourists to an island.",
            "contradiction": "The boat never left the harbour.",
        },
        follow=True,
    )
    page = posted.content.decode()
    assert "was not saved" in page, re.findall(r"<li class=\"message[^>]*>[^<]*|errorlist[^<]*<li>[^<]*", page)
    assert "was not saved" in page and "Saved, thank you." not in page


def test_defect_19_a_prolific_connection_says_nothing_is_stored_for_aws(client, researcher, settings):
    dataset = factories.dataset("m")
    study = study_named("m", dataset)
    MarketConnection.objects.create(study=study, market="prolific", sealed_credentials="x", webhook_key="k1")
    client.force_login(researcher)
    page = client.get(reverse("dashboard:markets"), {"study": "m"}).content.decode()
    token = page[page.index('id="token"') :].split(">", 1)[0]
    aws = page[page.index('id="access_key_id"') :].split(">", 1)[0]
    assert "stored; leave blank to keep" in token and "stored" not in aws


def test_defect_23_a_researcher_refused_an_admin_page_is_told_why_not_sent_to_a_market(client, make_researcher):
    from django.contrib.auth.models import Group

    user = make_researcher("plain")
    user.is_superuser = False
    user.save()
    assert Group.objects.filter(user=user).exists()
    client.force_login(user)
    response = client.get("/admin/quality/bonusentry/add/")
    page = response.content.decode()
    assert response.status_code == 403
    assert "open the study again from there" not in page and "lacks the permission" in page


def test_defect_25_the_demo_runs_with_a_market_key():
    dry = subprocess.run(["make", "-n", "demo"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    # One command (the embedded database's wrapper around migrate, load_demo and the server) gets
    # the key, so load_demo and the server both have it.
    key = dry.index("MARKET_CREDENTIALS_KEY=")
    assert key < dry.index("load_demo") < dry.index("runserver")
    assert "MARKET_CREDENTIALS_KEY=" not in dry[key + 1 :]


def test_defect_26_a_new_study_pays_no_catch_bonus_unless_told():
    assert Study._meta.get_field("bonus_per_catch_match").default == 0
    assert Study._meta.get_field("payment_per_task").default == 0


def test_defect_22_the_pool_sources_help_names_the_imports_file_column():
    help_text = Study._meta.get_field("pool_sources").help_text
    assert "the file column of the imports page" in help_text and "Source column" not in help_text


def test_defect_11_the_snapshot_form_offers_label_rows(client, researcher):
    client.force_login(researcher)
    page = client.get(reverse("dashboard:snapshots")).content.decode()
    assert 'name="label_rows"' in page and 'id="snapshot-label-rows"' in page


def test_defect_21_the_readme_names_the_port_and_the_typing_evidence_setting():
    readme = (REPO / "README.md").read_text()
    first_screen = readme[: readme.index("## Public corpora")]
    assert "make demo PORT=" in first_screen and "typing-evidence setting" in first_screen
