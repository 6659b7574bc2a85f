"""The validation app's AppConfig.ready at the edge mutmut found unguarded: its per-premise label
evidence added once to every quality test (Django may call ready() more than once). The Celery
task `release_expired` is decorated, so mutmut makes no mutant of it."""

from quality import guessers
from tests.quality.test_mutants_admin_and_tasks import ready_again
from validation.premise_label_evidence import premise_label_strata


def test_the_validation_apps_ready_adds_the_premise_label_strata_once_and_nothing_else():
    """Fails if ready() adds anything but the premise-label strata, which each completion's quality test calls."""
    kept = list(guessers._more_strata)
    try:
        ready_again("validation")
        assert guessers._more_strata == kept
        assert premise_label_strata in kept
    finally:
        guessers._more_strata[:] = kept
