from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("crowd", "0029_study_partial_completion"),
    ]

    operations = [
        migrations.AddField(
            model_name="study",
            name="open_link_unverified",
            field=models.BooleanField(
                default=False,
                help_text="Open link: ids are unverified, no bonuses. A paid study without a market connection or signed links opens only with this ticked; its bonuses are recorded but never paid, and each participant id is kept to the browser it first came from.",
            ),
        ),
    ]
