"""The core's models, moved here from `collection` and `validation` with their tables unchanged.

State only: the tables exist already (created by collection 0001 and validation 0001, which a
new database still runs first), so nothing is done to the database here.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("collection", "0005_pair_without_writing_claim"),
        ("validation", "0002_validation_policy"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="Dataset",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("slug", models.SlugField(unique=True)),
                        ("name", models.CharField(max_length=100)),
                        (
                            "label_scheme",
                            models.CharField(
                                choices=[
                                    ("three_way", "entailment / neutral / contradiction"),
                                    ("two_way", "entailed / not-entailed"),
                                ],
                                default="three_way",
                                max_length=20,
                            ),
                        ),
                        ("is_imported", models.BooleanField(default=False)),
                        (
                            "train_validation_fraction",
                            models.FloatField(
                                default=0.0,
                                help_text="Share of train pairs (0–1) that also get four validation labels.",
                            ),
                        ),
                        (
                            "writings_per_premise",
                            models.PositiveSmallIntegerField(
                                default=1, help_text="How many workers each write three hypotheses for one premise."
                            ),
                        ),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                    ],
                    options={
                        "db_table": "collection_dataset",
                        "ordering": ["slug"],
                    },
                ),
                migrations.CreateModel(
                    name="Genre",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "slug",
                            models.SlugField(
                                help_text="As written in the corpus files, e.g. 'nineeleven'.", unique=True
                            ),
                        ),
                        ("name", models.CharField(max_length=50)),
                        (
                            "is_training",
                            models.BooleanField(
                                help_text="Matched (in train) or held out (mismatched: dev/test only)."
                            ),
                        ),
                        ("description", models.CharField(blank=True, max_length=300)),
                    ],
                    options={
                        "db_table": "collection_genre",
                        "ordering": ["slug"],
                    },
                ),
                migrations.CreateModel(
                    name="PromptFamily",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("slug", models.SlugField(unique=True)),
                        ("name", models.CharField(max_length=100)),
                        (
                            "instructions",
                            models.TextField(help_text="Shown above the premise. Blank lines separate paragraphs."),
                        ),
                        (
                            "entailment_prompt",
                            models.CharField(help_text="Wording of the 'definitely correct' field.", max_length=300),
                        ),
                        (
                            "neutral_prompt",
                            models.CharField(help_text="Wording of the 'might be correct' field.", max_length=300),
                        ),
                        (
                            "contradiction_prompt",
                            models.CharField(help_text="Wording of the 'definitely incorrect' field.", max_length=300),
                        ),
                        ("faq_intro", models.TextField(blank=True)),
                    ],
                    options={
                        "verbose_name_plural": "prompt families",
                        "db_table": "collection_promptfamily",
                        "ordering": ["name"],
                    },
                ),
                migrations.CreateModel(
                    name="Premise",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("prompt_id", models.CharField(help_text="promptID (captionID for SNLI).", max_length=64)),
                        ("text", models.TextField()),
                        ("text_hash", models.CharField(db_index=True, editable=False, max_length=64)),
                        ("parse", models.TextField(blank=True)),
                        ("binary_parse", models.TextField(blank=True)),
                        (
                            "split",
                            models.CharField(
                                blank=True,
                                choices=[("train", "train"), ("dev", "dev"), ("test", "test")],
                                db_index=True,
                                max_length=5,
                            ),
                        ),
                        (
                            "status",
                            models.CharField(
                                choices=[
                                    ("available", "available"),
                                    ("held", "held for a researcher"),
                                    ("retired", "retired"),
                                ],
                                default="available",
                                max_length=10,
                            ),
                        ),
                        ("writings_done", models.PositiveIntegerField(default=0)),
                        (
                            "source",
                            models.CharField(
                                blank=True, help_text="File the premise was imported from.", max_length=255
                            ),
                        ),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "dataset",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="premises",
                                to="corpus.dataset",
                            ),
                        ),
                        (
                            "genre",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT, related_name="premises", to="corpus.genre"
                            ),
                        ),
                    ],
                    options={
                        "db_table": "collection_premise",
                        "ordering": ["id"],
                    },
                ),
                migrations.CreateModel(
                    name="Pair",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("pair_id", models.CharField(help_text="pairID: unique within the dataset.", max_length=64)),
                        ("hypothesis", models.TextField()),
                        ("parse", models.TextField(blank=True)),
                        ("binary_parse", models.TextField(blank=True)),
                        (
                            "author_label",
                            models.CharField(
                                choices=[
                                    ("entailment", "entailment"),
                                    ("neutral", "neutral"),
                                    ("contradiction", "contradiction"),
                                ],
                                max_length=20,
                            ),
                        ),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("needs_validation", models.BooleanField(db_index=True, default=False)),
                        (
                            "label_count",
                            models.PositiveSmallIntegerField(
                                default=0, help_text="Labels so far, the author's included."
                            ),
                        ),
                        ("entailment_votes", models.PositiveSmallIntegerField(default=0)),
                        ("neutral_votes", models.PositiveSmallIntegerField(default=0)),
                        ("contradiction_votes", models.PositiveSmallIntegerField(default=0)),
                        ("gold_label", models.CharField(db_index=True, default="-", max_length=20)),
                        (
                            "dataset",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE, related_name="pairs", to="corpus.dataset"
                            ),
                        ),
                        (
                            "premise",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE, related_name="pairs", to="corpus.premise"
                            ),
                        ),
                    ],
                    options={
                        "db_table": "collection_pair",
                        "ordering": ["id"],
                    },
                ),
                migrations.CreateModel(
                    name="PromptExample",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "label",
                            models.CharField(
                                choices=[
                                    ("entailment", "entailment"),
                                    ("neutral", "neutral"),
                                    ("contradiction", "contradiction"),
                                ],
                                max_length=20,
                            ),
                        ),
                        ("premise", models.TextField()),
                        ("hypothesis", models.TextField()),
                        ("explanation", models.TextField(blank=True)),
                        (
                            "family",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="examples",
                                to="corpus.promptfamily",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "collection_promptexample",
                    },
                ),
                migrations.AddField(
                    model_name="genre",
                    name="family",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT, related_name="genres", to="corpus.promptfamily"
                    ),
                ),
                migrations.CreateModel(
                    name="FaqEntry",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("question", models.CharField(max_length=300)),
                        ("answer", models.TextField()),
                        ("position", models.PositiveSmallIntegerField(default=0)),
                        (
                            "family",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="faq_entries",
                                to="corpus.promptfamily",
                            ),
                        ),
                    ],
                    options={
                        "verbose_name_plural": "FAQ entries",
                        "db_table": "collection_faqentry",
                        "ordering": ["family", "position", "id"],
                    },
                ),
                migrations.CreateModel(
                    name="Worker",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "market",
                            models.CharField(
                                choices=[
                                    ("local", "account on this site"),
                                    ("prolific", "Prolific"),
                                    ("mturk", "Mechanical Turk"),
                                ],
                                default="local",
                                max_length=10,
                            ),
                        ),
                        (
                            "external_id",
                            models.CharField(blank=True, help_text="PROLIFIC_PID or MTurk workerId.", max_length=128),
                        ),
                        (
                            "is_trusted",
                            models.BooleanField(default=False, help_text="In the closed pool of trusted validators."),
                        ),
                        (
                            "is_excluded",
                            models.BooleanField(
                                default=False, help_text="Labels left out of gold labels and statistics."
                            ),
                        ),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "user",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="worker",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "collection_worker",
                        "ordering": ["id"],
                    },
                ),
                migrations.CreateModel(
                    name="ValidationLabel",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "position",
                            models.PositiveSmallIntegerField(
                                help_text="1 is the author's label; 2–5 are validation labels."
                            ),
                        ),
                        (
                            "label",
                            models.CharField(
                                choices=[
                                    ("entailment", "entailment"),
                                    ("neutral", "neutral"),
                                    ("contradiction", "contradiction"),
                                ],
                                max_length=20,
                            ),
                        ),
                        (
                            "seconds",
                            models.FloatField(
                                blank=True, help_text="Time the validator spent on the batch / 5.", null=True
                            ),
                        ),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "pair",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE, related_name="labels", to="corpus.pair"
                            ),
                        ),
                        (
                            "worker",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="labels",
                                to="corpus.worker",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "validation_validationlabel",
                        "ordering": ["pair_id", "position"],
                    },
                ),
                migrations.AddField(
                    model_name="pair",
                    name="author",
                    field=models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="pairs",
                        to="corpus.worker",
                    ),
                ),
                migrations.AddIndex(
                    model_name="premise",
                    index=models.Index(fields=["dataset", "genre", "text_hash"], name="premise_genre_text"),
                ),
                migrations.AddIndex(
                    model_name="premise",
                    index=models.Index(
                        fields=["dataset", "status", "split", "writings_done"], name="premise_claimable"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="premise",
                    constraint=models.UniqueConstraint(fields=("dataset", "prompt_id"), name="unique_prompt_id"),
                ),
                migrations.AddConstraint(
                    model_name="promptexample",
                    constraint=models.UniqueConstraint(fields=("family", "label"), name="one_example_per_label"),
                ),
                migrations.AddConstraint(
                    model_name="worker",
                    constraint=models.UniqueConstraint(
                        condition=models.Q(("external_id", ""), _negated=True),
                        fields=("market", "external_id"),
                        name="unique_market_worker",
                    ),
                ),
                migrations.AddIndex(
                    model_name="validationlabel",
                    index=models.Index(fields=["worker", "created_at"], name="label_worker_time"),
                ),
                migrations.AddConstraint(
                    model_name="validationlabel",
                    constraint=models.UniqueConstraint(fields=("pair", "position"), name="one_label_per_position"),
                ),
                migrations.AddConstraint(
                    model_name="validationlabel",
                    constraint=models.UniqueConstraint(
                        condition=models.Q(("worker__isnull", False)),
                        fields=("pair", "worker"),
                        name="one_label_per_pair_worker",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="validationlabel",
                    constraint=models.CheckConstraint(
                        condition=models.Q(("position__gte", 1), ("position__lte", 5)), name="position_1_to_5"
                    ),
                ),
                migrations.AddIndex(
                    model_name="pair",
                    index=models.Index(fields=["needs_validation", "label_count"], name="pair_validation_queue"),
                ),
                migrations.AddIndex(
                    model_name="pair",
                    index=models.Index(fields=["created_at"], name="pair_created_at"),
                ),
                migrations.AddConstraint(
                    model_name="pair",
                    constraint=models.UniqueConstraint(fields=("dataset", "pair_id"), name="unique_pair_id"),
                ),
                migrations.AddConstraint(
                    model_name="pair",
                    constraint=models.UniqueConstraint(
                        condition=models.Q(("author__isnull", False)),
                        fields=("premise", "author", "author_label"),
                        name="one_pair_per_author_label",
                    ),
                ),
            ],
        ),
    ]
