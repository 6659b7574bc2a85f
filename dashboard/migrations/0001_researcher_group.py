"""The researcher group with its permissions (base/permissions.py). Staff accounts are
not put in it: being staff no longer makes anyone a researcher (`manage.py grant_researcher`)."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

from base.permissions import ensure_researcher_group


def create_researcher_group(apps, schema_editor):
    # Permissions are otherwise created after the last migration (post_migrate); the group needs them now.
    # A migration's app configs have no models module, so create_permissions would skip them; each is
    # given one for the call and then has its own back. Put back, never set to None: called with the
    # real registry (a test does), None would make every later post_migrate skip every app, so a
    # flushed test database would lose its content types and permissions for good (stops 31 and 62).
    for app_config in apps.get_app_configs():
        models_module = getattr(app_config, "models_module", None)  # a migration's stub has none
        app_config.models_module = models_module or True
        try:
            create_permissions(app_config, apps=apps, verbosity=0)
        finally:
            app_config.models_module = models_module
    ensure_researcher_group(apps.get_model("auth", "Group"), apps.get_model("auth", "Permission"))


def drop_researcher_group(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name="researchers").delete()


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("corpus", "0012_researcher_permissions"),
        ("crowd", "0006_mpe_task_kind"),
        ("collection", "0007_report_study_session"),
        ("validation", "0004_catch_trial_claims"),
        ("importers", "0003_content_types_from_corpora"),
        ("modeling", "0002_worker_tokens_and_checkpoints"),
        ("artifacts", "0003_studynudge_nudgerecord"),
        ("quality", "0004_catch_trials_and_bonus_ledger"),
    ]

    operations = [migrations.RunPython(create_researcher_group, drop_researcher_group)]
