"""The researcher group reads the audit log in the admin (base/permissions.py READ_AUDIT_LOG): the
group's permissions made complete again, as the group's first migration made them."""

from importlib import import_module

from django.db import migrations

first = import_module("dashboard.migrations.0001_researcher_group")


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0003_worker_table"),
        ("audit", "0002_refuse_truncate_and_allow_redaction"),
    ]

    operations = [migrations.RunPython(first.create_researcher_group, migrations.RunPython.noop)]
