"""Small builders for validation tests: a dataset with a fiction genre, and pairs as the writing task makes them."""

from corpus.models import Label, Split
from tests import factories


def make_dataset(slug="collected"):
    factories.genre("fiction")
    return factories.dataset(slug)


def make_pair(dataset, author=None, label=Label.ENTAILMENT, split=Split.DEV, needs_validation=True, premise=None):
    """A written pair: the author's label is label 1 and counts as one vote."""
    premise = premise or factories.premise(dataset, factories.genre("fiction"), split)
    return factories.pair(dataset, premise, [label], author=author, needs_validation=needs_validation)


def item_field(pair_pk, worker=None):
    """The task page's field name for a pair in the (given worker's) latest claim on it: an opaque
    per-claim token (`validation.forms.claim_field_name`), never the pair's primary key."""
    from validation.forms import claim_field_name
    from validation.models import ValidationClaim

    claims = ValidationClaim.objects.filter(pair_id=pair_pk)
    if worker is not None:
        claims = claims.filter(worker=worker)
    return claim_field_name(claims.latest("id"))


def pair_of_item():
    """{a task page's item name: its pair's pk}, from the claims (pages never show primary keys)."""
    from validation.forms import claim_field_name
    from validation.models import ValidationClaim

    return {claim_field_name(claim): claim.pair_id for claim in ValidationClaim.objects.all()}
