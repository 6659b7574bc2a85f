"""Attack: a team's annotator changes its data through /admin/.

Every role joins the researchers group, and an admin whose write rights come from the
group alone lets an annotator (view and label only on the dashboard) edit a pair's hypothesis in
the admin, with no audit entry. Per round, the annotator of team A tries:

  "edit hypothesis"  the pair's change page's form posted back with another hypothesis: stored?
  "delete pair"      the pair's delete page confirmed: gone?
  "mark pairs"       the pair list's "mark for validation" action on the pair: marked?
  "edit dataset"     the dataset's change form posted back with another name: stored?

A try succeeds when the row changed. Setup runs Django against the server's database (same
DATABASE_URL as the server): a team, its dataset, a premise and a pair, and its annotator.

    DATABASE_URL=... .venv/bin/python -m bench.attacks.admin_annotator_writes --base-url http://127.0.0.1:8806
"""

import argparse
import json
import secrets
import uuid

from ._admin_client import AdminBrowser, form_fields
from ._common import django_ready, wilson_interval

NAME = "admin-annotator-writes"
CLAIM = "A team's annotator (view and label only) changes or deletes the team's data through the admin."
VARIANTS = ("edit hypothesis", "delete pair", "mark pairs", "edit dataset")
ROUNDS = 3


def setup(seed=0):
    django_ready()
    from django.contrib.auth import get_user_model

    from base.permissions import ensure_researcher_group
    from corpus.models import Dataset, Genre, Pair, Premise
    from teams.models import Membership, Role, Team

    tag = f"{seed}-{uuid.uuid4().hex[:8]}"
    team = Team.objects.create(slug=f"annotated-{tag}", name=f"Annotated {tag}")
    dataset = Dataset.objects.create(slug=f"annotated-data-{tag}", name=f"annotated-data-{tag}", team=team)
    genre = Genre.objects.order_by("pk").first() or Genre.objects.create(slug=f"g-{tag}", name="genre")
    premise = Premise.objects.create(dataset=dataset, genre=genre, prompt_id=f"p-{tag}", text="A man sleeps.")
    pairs = [
        Pair.objects.create(
            dataset=dataset, premise=premise, pair_id=f"{tag}-{n}", hypothesis="A man rests.", author_label="entailment"
        ).pk
        for n in range(ROUNDS)
    ]
    password = secrets.token_urlsafe(16)
    annotator = get_user_model().objects.create_user(f"annotator-{tag}", password=password, is_staff=True)
    annotator.groups.add(ensure_researcher_group())
    Membership.objects.create(team=team, user=annotator, role=Role.ANNOTATOR)
    return {"pairs": pairs, "dataset": dataset.pk, "login": (annotator.username, password)}


def _pair(pk):
    from corpus.models import Pair

    return Pair.objects.filter(pk=pk).values_list("hypothesis", "needs_validation").first()


def _dataset_name(pk):
    from corpus.models import Dataset

    return Dataset.objects.filter(pk=pk).values_list("name", flat=True).first()


def run(base_url, *, seed=0):
    known = setup(seed)
    browser = AdminBrowser(base_url)
    assert browser.login(*known["login"]), "the annotator could not log in to the admin"
    by_variant: dict[str, list[bool]] = {variant: [] for variant in VARIANTS}
    for pair in known["pairs"]:
        change = f"/admin/corpus/pair/{pair}/change/"
        before = _pair(pair)
        status, page = browser.get(change)
        fields = form_fields(page) if status == 200 else {}
        fields["hypothesis"] = "A man is an astronaut."
        browser.post(change, fields)
        by_variant["edit hypothesis"].append(_pair(pair)[0] != before[0])
        browser.post("/admin/corpus/pair/", {"action": "mark_for_validation", "_selected_action": str(pair)})
        by_variant["mark pairs"].append(_pair(pair)[1] != before[1])
        dataset_change = f"/admin/corpus/dataset/{known['dataset']}/change/"
        name = _dataset_name(known["dataset"])
        status, page = browser.get(dataset_change)
        fields = form_fields(page) if status == 200 else {}
        fields["name"] = f"renamed-{uuid.uuid4().hex[:6]}"
        browser.post(dataset_change, fields)
        by_variant["edit dataset"].append(_dataset_name(known["dataset"]) != name)
        browser.post(f"/admin/corpus/pair/{pair}/delete/", {"post": "yes"})
        by_variant["delete pair"].append(_pair(pair) is None)
    tries = sum(len(outcomes) for outcomes in by_variant.values())
    succeeded = sum(sum(outcomes) for outcomes in by_variant.values())
    return {
        "attack": NAME,
        "tries": tries,
        "succeeded": succeeded,
        "measure": "share of the annotator's admin writes that changed the team's rows",
        "value": round(succeeded / tries, 4),
        "interval": wilson_interval(succeeded, tries),
        "at_chance_or_refused": succeeded == 0,
        "detail": "; ".join(f"{variant}: {sum(outcomes)}/{len(outcomes)}" for variant, outcomes in by_variant.items()),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(json.dumps(run(args.base_url, seed=args.seed), indent=2))


if __name__ == "__main__":
    main()
