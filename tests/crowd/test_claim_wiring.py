"""The composition root names every concrete task claim, so the crowd layer releases them all.

crowd.arrival releases a worker's open claims (another study session, an exclusion) over the claim
models that annotation_site.wiring passes in; it no longer scans the app registry (a coupling the
layering test cannot see). A claim model added to a task app and left out of CLAIM_MODELS would
keep its tasks held after its worker moved on or was excluded: this test names it.
"""

from django.apps import apps

from annotation_site.wiring import CLAIM_MODELS
from crowd.models import TaskClaim


def test_every_concrete_task_claim_is_in_the_wiring():
    # The test may scan the registry: it checks the explicit list against what is installed.
    concrete = {model for model in apps.get_models() if issubclass(model, TaskClaim)}
    assert concrete, "no concrete TaskClaim found: the check would pass vacuously"
    missing = sorted(model._meta.label for model in concrete - set(CLAIM_MODELS))
    assert not missing, f"task claims the crowd layer would never release: {missing}"
    assert len(set(CLAIM_MODELS)) == len(CLAIM_MODELS)
