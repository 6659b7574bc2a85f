"""The default team, with every staff account in it as an owner: an install from before teams
keeps working as it did (every researcher had every right their permissions gave)."""

from django.conf import settings
from django.db import migrations


def forwards(apps, schema_editor):
    Team = apps.get_model("teams", "Team")
    Membership = apps.get_model("teams", "Membership")
    User = apps.get_model(*settings.AUTH_USER_MODEL.split("."))
    team, _ = Team.objects.get_or_create(slug="default", defaults={"name": "Default team"})
    for user in User.objects.filter(is_staff=True):
        Membership.objects.get_or_create(team=team, user=user, defaults={"role": "owner"})


class Migration(migrations.Migration):
    dependencies = [
        ("teams", "0001_teams_and_memberships"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
