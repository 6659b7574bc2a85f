"""The app was renamed from `corpora` to `importers`: its content type follows, so that admin history
and permissions granted on corpus imports stay attached (as collection/0006 did for the core)."""

from django.db import migrations

OLD, NEW = "corpora", "importers"


def rename_content_types(apps, schema_editor, source=OLD, target=NEW):
    ContentType = apps.get_model("contenttypes", "ContentType")
    for content_type in ContentType.objects.filter(app_label=source):
        # A fresh database has none yet (they are made after migrating); never make a duplicate.
        if not ContentType.objects.filter(app_label=target, model=content_type.model).exists():
            content_type.app_label = target
            content_type.save(update_fields=["app_label"])


def rename_back(apps, schema_editor):
    rename_content_types(apps, schema_editor, source=NEW, target=OLD)


class Migration(migrations.Migration):
    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("importers", "0002_dataset_in_corpus"),
    ]

    operations = [migrations.RunPython(rename_content_types, rename_back)]
