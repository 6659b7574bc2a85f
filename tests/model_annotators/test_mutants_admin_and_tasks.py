"""The model annotators' AppConfig.ready at the edges mutmut found unguarded: the live vote's
receiver and the cache-forgetting receivers of model uses and prompt versions, each wired once for
its own model under its own name (Django may call ready() more than once)."""

from django.db.models.signals import post_delete, post_save

from model_annotators.models import ModelUse, PromptVersion
from tests.quality.test_mutants_admin_and_tasks import ready_again
from validation.signals import validation_labels_added


def test_the_model_annotators_ready_wires_the_vote_and_the_forgetting_once_for_their_models():
    """Fails if the live vote or a cache-forgetting receiver is wired for every model or twice on a second ready()."""
    before, after = ready_again("model_annotators", validation_labels_added, post_save, post_delete)
    assert after == before
    added, saved, deleted = after
    assert ("model-annotators-vote", id(None)) in added
    assert ("model-annotators-votes-on", id(ModelUse)) in saved
    assert ("model-annotators-triage", id(ModelUse)) in saved
    assert ("model-annotators-triage-prompt", id(PromptVersion)) in saved
    assert ("model-annotators-votes-on-deleted", id(ModelUse)) in deleted
    assert ("model-annotators-triage-deleted", id(ModelUse)) in deleted
