"""Installing the prompt text (corpus.prompt_content) as rows: the families, examples, FAQ entries and
genres that are missing are created, rows that exist (and may have been edited by researchers in
the admin) are left alone."""

from django.apps.registry import Apps

from corpus.prompt_content import FAMILIES, GENERAL_FAQ, GENRES


def install_prompt_content(apps: Apps | None = None) -> int:
    """Create the families, examples, FAQ entries and genres that are missing; leave existing rows alone.

    `apps` is a migration's app registry, or None for the live models. Returns how many rows were created.
    """
    if apps is None:
        from django.apps import apps as live_apps

        apps = live_apps
    PromptFamily = apps.get_model("corpus", "PromptFamily")
    PromptExample = apps.get_model("corpus", "PromptExample")
    FaqEntry = apps.get_model("corpus", "FaqEntry")
    Genre = apps.get_model("corpus", "Genre")

    created = 0
    by_slug = {}
    for spec in FAMILIES:
        family, made = PromptFamily.objects.get_or_create(
            slug=spec["slug"],
            defaults={
                key: spec[key]
                for key in (
                    "name",
                    "instructions",
                    "entailment_prompt",
                    "neutral_prompt",
                    "contradiction_prompt",
                    "faq_intro",
                )
            },
        )
        by_slug[spec["slug"]] = family
        created += made
        if not made:
            # An existing family was installed before and may have been edited: keep it as it is.
            continue
        for example in spec["examples"]:
            PromptExample.objects.create(family=family, **example)
            created += 1
        for position, entry in enumerate(list(spec["faq"]) + list(GENERAL_FAQ), start=1):
            FaqEntry.objects.create(family=family, position=position, **entry)
            created += 1
    for spec in GENRES:
        family = by_slug.get(spec["family"]) or PromptFamily.objects.get(slug=spec["family"])
        _, made = Genre.objects.get_or_create(
            slug=spec["slug"],
            defaults={
                "name": spec["name"],
                "is_training": spec["is_training"],
                "family": family,
                "description": spec["description"],
            },
        )
        created += made
    return created
