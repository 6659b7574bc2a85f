from django.apps import AppConfig
from django.db.models.signals import pre_delete


class CollectionConfig(AppConfig):
    name = "collection"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from corpus.models import Pair

        from .hypothesis_tally import TALLY, pair_deleting
        from .shape_holds import register_salad_hold_kind

        # A written pair deleted on its own leaves the cost page's hypothesis count.
        pre_delete.connect(pair_deleting, sender=Pair, dispatch_uid="collection.hypothesis_tally")
        # Follows split moves and is folded, checked and rebuilt with the corpus's tallies.
        TALLY.register()
        register_salad_hold_kind()
