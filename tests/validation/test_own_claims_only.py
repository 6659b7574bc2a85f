"""A judgment is accepted only for an item of the judge's own claim, and the
grammaticality page asks the study's qualification like every other task page.

`grammar-<pk>=major` was accepted for any pair open for judging: three ids filled every slot of
chosen pairs with "major", which feeds the snapshot filter `drop_ungrammatical`."""

import pytest
from django.urls import reverse

from corpus.models import Dataset, GrammaticalityJudgment
from crowd.claiming import FOREIGN_ITEMS_MESSAGE
from crowd.models import TaskKind
from quality import qualification
from tests.present import present
from tests.quality.qualification_helpers import PROLIFIC, qualified_study, worker_of_prolific_id
from tests.validation.test_grammaticality_page import open_dataset
from validation import grammaticality as grammar
from validation.batch_claims import ValidationRefused

pytestmark = pytest.mark.django_db


def test_foreign_grammaticality_keys_are_refused_and_nothing_is_saved(client, make_worker):
    _, pairs = open_dataset("gram-foreign", n=6)
    attacker = make_worker()
    client.force_login(attacker.user)
    client.get(reverse("validation:grammaticality"))  # a page of five, the sixth is never served
    served = set(grammar.hypotheses_to_judge(attacker))
    (foreign,) = [pair for pair in pairs if pair not in served]
    response = client.post(reverse("validation:grammaticality"), {f"grammar-{foreign.pk}": "major"})
    assert response.status_code == 400 and FOREIGN_ITEMS_MESSAGE in response.content.decode()
    assert not GrammaticalityJudgment.objects.exists()


def test_a_judgment_without_any_page_is_refused(make_worker):
    (pair, *_) = open_dataset("gram-no-page", n=2)[1]
    with pytest.raises(ValidationRefused, match="not in your own task"):
        grammar.submit_judgments(make_worker(), {pair.pk: "major"})
    assert not GrammaticalityJudgment.objects.exists()


def test_the_grammaticality_page_sends_an_unqualified_worker_to_the_test(client):
    study, _ = qualified_study(task_kind=TaskKind.VALIDATION, slug="qualified-validation")
    Dataset.objects.filter(pk=study.dataset_id).update(grammaticality_judgments=2)
    client.get(reverse("study_entry", args=[study.slug]), PROLIFIC)
    assert not qualification.has_passed(present(qualification.test_for(study)), worker_of_prolific_id())
    for response in (
        client.get(reverse("validation:grammaticality")),
        client.post(reverse("validation:grammaticality"), {"grammar-1": "major"}),
    ):
        assert response.status_code == 302 and response["Location"] == reverse("qualification", args=[study.slug])
    assert not GrammaticalityJudgment.objects.exists()
