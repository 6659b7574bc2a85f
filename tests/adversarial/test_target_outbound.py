"""An adversarial round's target endpoint is a URL a researcher typed: it goes out through
base.outbound, so an inward address is never reached unless the deployment allow-lists it."""

import pytest
from django.test import override_settings

from adversarial import targets

from .helpers import ContractModel


@pytest.fixture
def model():
    server = ContractModel()
    yield server
    server.close()


def test_an_allow_listed_model_server_answers(model):
    probabilities = targets.endpoint_probabilities(model.url, "A man sleeps.", "Nobody sleeps.", retries=0)
    assert set(probabilities) == {"entailment", "neutral", "contradiction"} and model.requests == 1


def test_a_loopback_target_is_refused_without_a_request_and_not_retried(model):
    with override_settings(OUTBOUND_ALLOWED_NETWORKS=[]), pytest.raises(targets.TargetUnavailable):
        targets.endpoint_probabilities(model.url, "A man sleeps.", "Nobody sleeps.", retries=2)
    assert model.requests == 0
