"""The admin: researchers only, every model listed, filters and searches, bulk actions."""

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from collection.models import PremiseReport
from corpus.models import Pair, Premise, PremiseStatus, ValidationLabel, Worker
from tests.present import present

from . import factories

pytestmark = pytest.mark.django_db

CHANGELISTS = [
    "corpus_dataset",
    "corpus_genre",
    "corpus_promptfamily",
    "corpus_premise",
    "collection_premisereport",
    "corpus_worker",
    "crowd_study",
    "crowd_studysession",
    "collection_writingclaim",
    "corpus_pair",
    "corpus_validationlabel",
    "validation_validationclaim",
    "validation_validationpolicy",
    "modeling_snapshot",
    "modeling_trainingrun",
]


def test_only_staff_can_log_in_to_the_admin(client, db):
    get_user_model().objects.create_user("plain", password="plain-pass-1")  # not staff, not a worker
    response = client.post(reverse("admin:login"), {"username": "plain", "password": "plain-pass-1"})
    assert response.status_code == 200  # the form again, with an error
    assert "Please enter the correct username and password for a staff account" in response.content.decode()
    assert "_auth_user_id" not in client.session
    index = client.get(reverse("admin:index"))
    assert index.status_code == 302 and index["Location"].startswith(reverse("admin:login"))


def test_workers_never_see_the_admin(client, make_worker):
    factories.corpus()
    client.force_login(make_worker().user)
    for url in (reverse("admin:index"), reverse("admin:corpus_pair_changelist")):
        response = client.get(url)
        assert response.status_code == 403, url
        assert "The man was tired." not in response.content.decode()  # no pair leaks into the page
    # Nor can a worker change anything through the admin.
    pair = Pair.objects.get(hypothesis="The man was tired.")
    refused = client.post(
        reverse("admin:corpus_pair_changelist"), {"action": "unmark_for_validation", "_selected_action": [pair.pk]}
    )
    assert refused.status_code == 403
    assert Pair.objects.get(pk=pair.pk).needs_validation == pair.needs_validation


def test_every_model_has_a_changelist_and_change_page(client, researcher):
    factories.corpus()
    worker = Worker.objects.create(user=get_user_model().objects.create_user("w1"))
    client.force_login(researcher)
    for name in CHANGELISTS:
        response = client.get(reverse(f"admin:{name}_changelist"))
        assert response.status_code == 200, name
        # The page lists the model's rows, not an empty or error page.
        model_name = name.split("_", 1)[1]
        model = response.context["cl"].model
        assert model._meta.model_name == model_name, name
        assert response.context["cl"].result_count == model.objects.count(), name
    pair = present(Pair.objects.filter(label_count=5).first())
    for url in (
        reverse("admin:corpus_pair_change", args=[pair.pk]),
        reverse("admin:corpus_premise_change", args=[pair.premise_id]),
        reverse("admin:corpus_worker_change", args=[worker.pk]),
        reverse("admin:corpus_promptfamily_change", args=[factories.family().pk]),
    ):
        response = client.get(url)
        assert response.status_code == 200, url
        assert response.context["original"].pk == int(url.rstrip("/").split("/")[-2]), url


def test_pair_page_shows_its_labels_read_only(client, researcher):
    factories.corpus()
    client.force_login(researcher)
    pair = Pair.objects.get(hypothesis="The man was tired.")
    html = client.get(reverse("admin:corpus_pair_change", args=[pair.pk])).content.decode()
    labels = list(ValidationLabel.objects.filter(pair=pair).values_list("label", flat=True))
    assert labels == ["neutral", "neutral", "entailment", "neutral", "contradiction"]
    # The inline lists the five labels and offers no way to add or edit one by hand.
    inline = next(f for f in response_inline_formsets(client, pair) if f.formset.prefix == "labels")
    assert [form.instance.label for form in inline.formset.forms] == labels
    assert inline.has_add_permission is False  # and every field is read only: no label input below
    assert 'name="labels-0-label"' not in html and 'name="labels-5-label"' not in html
    for label in set(labels):
        assert label in html
    # Counters are read only: posting new values changes nothing.
    client.post(
        reverse("admin:corpus_pair_change", args=[pair.pk]),
        {
            "pair_id": pair.pair_id,
            "hypothesis": pair.hypothesis,
            "label_count": 1,
            "gold_label": "entailment",
            "needs_validation": "on",
            "labels-TOTAL_FORMS": 5,
            "labels-INITIAL_FORMS": 5,
            "labels-MIN_NUM_FORMS": 0,
            "labels-MAX_NUM_FORMS": 0,
        },
    )
    pair.refresh_from_db()
    assert (pair.label_count, pair.gold_label) == (5, "neutral")


def response_inline_formsets(client, pair):
    return client.get(reverse("admin:corpus_pair_change", args=[pair.pk])).context["inline_admin_formsets"]


def test_filters_and_searches(client, researcher):
    factories.corpus()
    client.force_login(researcher)
    url = reverse("admin:corpus_pair_changelist")
    for query, expected in [
        ({"gold_label": "-"}, {"Someone wrote a letter.", "The friend was thanked.", "She was sad."}),
        ({"gold_label": "contradiction"}, {"The road was full of cars."}),
        ({"label_count": "3"}, {"The friend was thanked."}),
        ({"split": "train"}, {"She was sad."}),
        ({"needs_validation__exact": "0"}, {"She was sad."}),
        ({"q": "cars"}, {"The road was full of cars."}),
        ({"q": "dawn"}, {"A man walked.", "The man was tired.", "The road was full of cars."}),  # premise text
        (
            {"premise__genre__id__exact": factories.genre("letters").pk},
            {"Someone wrote a letter.", "The friend was thanked."},
        ),
    ]:
        response = client.get(url, query)
        assert response.status_code == 200, query
        shown = {pair.hypothesis for pair in response.context["cl"].result_list}
        assert shown == expected, query
    # Big tables do not count every row for the "show all" link.
    assert response.context["cl"].show_full_result_count is False
    premises = client.get(reverse("admin:corpus_premise_changelist"), {"q": "letter"})
    assert {p.text for p in premises.context["cl"].result_list} == {"Dear friend, thank you for the kind letter."}


def action(client, model, name, ids):
    return client.post(reverse(f"admin:{model}_changelist"), {"action": name, "_selected_action": ids}, follow=True)


def test_hold_and_release_premises(client, researcher, make_worker):
    factories.corpus()
    client.force_login(researcher)
    premise = Premise.objects.get(text="She laughed.")
    report = PremiseReport.objects.create(premise=premise, worker=make_worker(), message="Too short to use.")
    action(client, "corpus_premise", "hold_premises", [premise.pk])
    premise.refresh_from_db()
    assert premise.status == PremiseStatus.HELD
    response = action(client, "corpus_premise", "release_premises", [premise.pk])
    premise.refresh_from_db()
    report.refresh_from_db()
    assert premise.status == PremiseStatus.AVAILABLE and report.resolved
    assert "1 premise(s) released; 1 report(s) resolved." in response.content.decode()


def test_mark_and_unmark_pairs_for_validation(client, researcher):
    factories.corpus()
    client.force_login(researcher)
    pair = Pair.objects.get(hypothesis="She was sad.")
    action(client, "corpus_pair", "mark_for_validation", [pair.pk])
    pair.refresh_from_db()
    assert pair.needs_validation
    action(client, "corpus_pair", "unmark_for_validation", [pair.pk])
    pair.refresh_from_db()
    assert not pair.needs_validation


def test_trust_and_exclude_workers_recomputes_gold(client, researcher, make_worker):
    dataset = factories.dataset()
    premise = factories.premise(dataset, factories.genre("fiction"), "dev", "A dog runs in the park.")
    author, v1, v2, v3, v4 = (make_worker() for _ in range(5))
    pair = factories.pair(
        dataset,
        premise,
        "An animal moves.",
        ["entailment", "entailment", "entailment", "neutral", "neutral"],
        author=author,
        validators=[v1, v2, v3, v4],
    )
    assert pair.gold_label == "entailment"
    client.force_login(researcher)
    action(client, "corpus_worker", "trust_workers", [v3.pk, v4.pk])
    assert set(Worker.objects.filter(is_trusted=True)) == {v3, v4}
    response = action(client, "corpus_worker", "exclude_workers", [v1.pk])
    v1.refresh_from_db()
    pair.refresh_from_db()
    assert v1.exclusions.exists()
    # Without v1's entailment, 2 entailment vs 2 neutral: no gold label any more.
    assert (pair.label_count, pair.gold_label) == (4, "-")
    assert "gold labels recounted" in response.content.decode()
    action(client, "corpus_worker", "include_workers", [v1.pk])
    pair.refresh_from_db()
    assert (pair.label_count, pair.gold_label) == (5, "entailment")
