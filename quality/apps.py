from django.apps import AppConfig


class QualityConfig(AppConfig):
    """Quality control for a paid crowd: researcher labels, catch trials, bonuses, worker flags,
    qualification tests and probabilistic aggregation."""

    name = "quality"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Studies with access "qualified" ask this app's check (crowd never imports quality).
        from crowd.access import register_admission_check

        from .qualification import admission_check

        register_admission_check(admission_check)
        # Validation serves and reports catch trials through these signals (crowd/signals.py).
        from crowd.signals import catch_trials_wanted, validation_batch_submitted

        from . import admin_qualification  # noqa: F401  (registers the qualification admin)
        from .catch_trials import pick_catch_trials, score_catch_trials

        catch_trials_wanted.connect(pick_catch_trials, dispatch_uid="quality.pick_catch_trials")
        validation_batch_submitted.connect(score_catch_trials, dispatch_uid="quality.score_catch_trials")
        # A study may hold the completion code of a session whose labels are at chance so far.
        from crowd.signals import completion_hold_wanted

        from .guessers import hold_code_of_guesser

        completion_hold_wanted.connect(hold_code_of_guesser, dispatch_uid="quality.hold_code_of_guesser")
        # The approval and bonus lists mark flagged workers (crowd.selectors.worker_marks).
        from crowd.signals import worker_marks_wanted

        from .selectors import flag_marks

        worker_marks_wanted.connect(flag_marks, dispatch_uid="quality.flag_marks")
