import os

import pytest

from artifacts.phenomenon_tagger import TaggerUnavailable, load_tagger


def in_ci():
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


@pytest.fixture(scope="session")
def loaded_tagger():
    """The real English pipeline: skipped when it is not installed, a failure in CI."""
    try:
        return load_tagger()
    except TaggerUnavailable as error:
        if in_ci():
            pytest.fail(f"CI installs requirements.txt, so the model must be here: {error}")
        pytest.skip(str(error))


@pytest.fixture(autouse=True)
def _forget_scoring_models():
    """The scoring endpoint keeps models and the latest refresh id in process memory; a test's
    rolled-back database reuses ids, so each test starts without them."""
    from artifacts import monitoring

    def forget() -> None:
        with monitoring._lock:
            monitoring._models.clear()
            monitoring._checked.clear()

    forget()
    yield
    forget()


@pytest.fixture(scope="session")
def parsing_tagger():
    """The real English pipeline with its dependency parser on (tags and parse trees in one pass)."""
    try:
        return load_tagger(parse=True)
    except TaggerUnavailable as error:
        if in_ci():
            pytest.fail(f"CI installs requirements.txt, so the model must be here: {error}")
        pytest.skip(str(error))
