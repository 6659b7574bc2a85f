from django.apps import AppConfig


class ImportersConfig(AppConfig):
    """Existing corpora in and out: SNLI, MultiNLI, GLUE TSV, MPE and DNC files imported as pairs with
    their labels (and exported back in their own formats), recasting, building MPE items."""

    name = "importers"
    verbose_name = "corpus imports"
