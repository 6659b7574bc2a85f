from django.apps import AppConfig


class CorporaConfig(AppConfig):
    """Imports existing corpora (SNLI, MultiNLI, GLUE TSV) as pairs with their labels."""

    name = "corpora"
