"""MPE's per-premise (SPE) labels (Lai et al. 2017 §5.2): marking items, batches of premise-hypothesis
pairs, three judgments each and their consensus, the export, and Table 4."""

import io

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from corpus.models import Label, Split
from tests import factories
from tests.present import present
from validation import premise_labels as services
from validation.batch_claims import BatchExpired, BatchIncomplete, BatchNotFound
from validation.models import PremiseLabel, PremiseLabelClaim, PremisePair
from validation.premise_label_selectors import premise_label_rows, spe_table
from validation.premise_table import (
    PremiseLabelRow,
    consensus,
    heuristic_vote,
    majority_vote,
    read_rows,
    table4,
    table4_from_rows,
    write_rows,
)

from .premise_helpers import CAPTIONS, field_of, make_items, stale_premise_pairs

pytestmark = pytest.mark.django_db
E, N, C = Label.ENTAILMENT.value, Label.NEUTRAL.value, Label.CONTRADICTION.value


def dumps(rows):
    buffer = io.StringIO()
    write_rows(rows, buffer)
    return buffer.getvalue()


def fill(premise_pair, labels, make_worker):
    """Three (or fewer) workers label one premise pair through claims and submits."""
    for label in labels:
        worker = make_worker()
        services.add_premise_labels(worker, {premise_pair.pk: label})


# --- the rules -----------------------------------------------------------------------------------


def test_consensus_is_the_label_of_two_of_three_else_a_dash():
    assert consensus([E, E, N]) == E
    assert consensus([C, N, C]) == C
    assert consensus([N, N, N]) == N
    assert consensus([E, N, C]) == "-"
    assert consensus([E, E]) == "-"  # based on three judgments: not yet
    assert consensus([]) == "-"


def test_votes_over_four_spe_labels():
    assert majority_vote([E, E, E, N]) == E
    assert majority_vote([E, E, N, N]) == "-"  # no three of four: no prediction
    assert heuristic_vote([E, E, N, C]) == E
    assert heuristic_vote([C, N, N, N]) == C
    assert heuristic_vote([E, C, N, N]) == N
    assert heuristic_vote(["-", "-", N, N]) == N


def test_table4_on_a_hand_built_set():
    items = [
        (E, [N, N, N, N]),  # 0 agree; majority N wrong; heuristic N wrong
        (C, [N, C, N, N]),  # 1 agree; majority N wrong; heuristic C right
        (E, [E, E, N, N]),  # 2 agree; majority none; heuristic E right
        (N, [N, N, E, N]),  # 3 agree; majority N right; heuristic E wrong
        (C, [C, C, C, C]),  # 4 agree; both right
        (N, [E, C, "-", N]),  # 1 agree; majority none; heuristic N right; a '-'
        (C, [C, C, C, E]),  # 3 agree; majority C right; heuristic C right
        (E, [C, C, N, N]),  # 0 agree; both wrong
    ]
    table = table4(items)
    assert table.items == 8
    assert table.category_counts == {0: 2, 1: 2, 2: 1, 3: 2, 4: 1}
    assert table.category_shares[0] == 0.25
    assert table.majority_correct == 3 == sum(table.category_counts[k] for k in (3, 4))  # §5.2: 3 or 4 agree
    assert table.heuristic_correct == 5
    assert table.majority_accuracy == 3 / 8 and table.heuristic_accuracy == 5 / 8
    assert table.items_with_no_consensus == 1
    assert any("21.8%" in line for line in table.lines())  # the paper's dev figures beside ours


# --- marking -------------------------------------------------------------------------------------


def test_marking_one_split_makes_four_premise_pairs_per_item_once():
    dataset, dev = make_items(2, mark=False)
    _, train = make_items(1, split=Split.TRAIN, mark=False, start=10)
    assert services.mark_for_premise_labels(dataset, split=Split.DEV) == {"items": 2, "premise_pairs": 8}
    assert services.mark_for_premise_labels(dataset, split=Split.DEV) == {"items": 2, "premise_pairs": 0}
    assert set(PremisePair.objects.values_list("item_id", "index")) == {(i.pk, n) for i in dev for n in range(4)}
    assert not PremisePair.objects.filter(item=train[0]).exists()


def test_marking_a_single_premise_dataset_is_refused_by_name():
    dataset = factories.dataset("single")
    with pytest.raises(services.PremiseLabelRefused, match="single-premise"):
        services.mark_for_premise_labels(dataset)
    with pytest.raises(CommandError, match="single-premise"):
        call_command("mark_premise_labels", "--dataset", "single")


# --- claims, submits, the cap of three -----------------------------------------------------------


def test_a_batch_holds_one_premise_per_item_and_a_reload_gives_it_back(make_worker):
    make_items(3)
    worker = make_worker()
    batch = present(services.claim_premise_batch(worker))
    claims = list(PremiseLabelClaim.objects.filter(batch=batch).select_related("premise_pair"))
    assert len(claims) == 3
    assert len({claim.premise_pair.item_id for claim in claims}) == 3
    assert services.claim_premise_batch(worker) == batch


def test_a_premise_pair_takes_three_judgments_from_three_workers_and_then_no_more(make_worker):
    make_items(1)
    workers = [make_worker() for _ in range(13)]
    for worker in workers[:12]:  # four premises x three judgments
        batch = services.claim_premise_batch(worker)
        assert batch is not None
        claims = PremiseLabelClaim.objects.filter(batch=batch)
        assert claims.count() == 1  # one premise of the item per batch
        services.submit_premise_batch(worker, batch, {claim.premise_pair_id: E for claim in claims})
    assert services.claim_premise_batch(workers[12]) is None
    assert list(PremisePair.objects.values_list("label_count", "consensus")) == [(3, E)] * 4
    with pytest.raises(services.PremiseLabelRefused, match="already has its three judgments"):
        services.add_premise_labels(workers[12], {present(PremisePair.objects.first()).pk: N})
    assert PremiseLabel.objects.count() == 12


def test_a_second_judgment_by_the_same_worker_is_refused_with_a_clear_message(make_worker):
    make_items(1)
    worker = make_worker()
    premise_pair = present(PremisePair.objects.first())
    services.add_premise_labels(worker, {premise_pair.pk: E})
    with pytest.raises(services.PremiseLabelRefused, match="already labelled one of these premise-hypothesis pairs"):
        services.add_premise_labels(worker, {premise_pair.pk: N})
    # Nor is the pair offered to them again.
    batch = present(services.claim_premise_batch(worker))
    offered = set(PremiseLabelClaim.objects.filter(batch=batch).values_list("premise_pair_id", flat=True))
    assert premise_pair.pk not in offered
    assert PremiseLabel.objects.filter(premise_pair=premise_pair).count() == 1


def test_consensus_and_counts_move_with_each_label(make_worker):
    make_items(1)
    first, second = PremisePair.objects.order_by("index")[:2]
    fill(first, [E, N, E], make_worker)
    fill(second, [E, N, C], make_worker)
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.label_count, first.entailment_votes, first.neutral_votes, first.consensus) == (3, 2, 1, E)
    assert (second.label_count, second.consensus) == (3, "-")
    assert stale_premise_pairs() == 0  # the kept counts are the labels'


def test_an_incomplete_or_expired_batch_saves_nothing(make_worker):
    make_items(2)
    worker = make_worker()
    batch = present(services.claim_premise_batch(worker))
    claims = list(PremiseLabelClaim.objects.filter(batch=batch))
    with pytest.raises(BatchIncomplete, match="missing: pair 2"):
        services.submit_premise_batch(worker, batch, {claims[0].premise_pair_id: E})
    PremiseLabelClaim.objects.filter(batch=batch).update(expires_at="2000-01-01T00:00:00Z")
    with pytest.raises(BatchExpired):
        services.submit_premise_batch(worker, batch, {claim.premise_pair_id: E for claim in claims})
    assert PremiseLabel.objects.count() == 0


def test_an_excluded_worker_is_refused(make_worker):
    dataset, _ = make_items(1)
    excluded = make_worker(is_excluded=True)  # by the team of the items' dataset
    with pytest.raises(services.PremiseLabelRefused, match="not taking part"):
        services.claim_premise_batch(excluded, dataset=dataset)
    assert services.claim_premise_batch(excluded) is None  # outside a study: none of the team's items


# --- the page ------------------------------------------------------------------------------------


def test_the_page_shows_one_caption_the_hypothesis_and_the_validation_answers(client, make_worker):
    make_items(2)
    worker = make_worker()
    client.force_login(worker.user)
    response = client.get(reverse("validation:premise-next"))
    assert response.status_code == 302
    page = client.get(response["Location"]).content.decode()
    claims = list(PremiseLabelClaim.objects.filter(worker=worker).select_related("premise_pair__item"))
    for claim in claims:
        shown = claim.premise_pair.item.premise.sentences[claim.premise_pair.index]["text"]
        assert shown in page and claim.premise_pair.item.hypothesis in page
        others = [
            s["text"] for n, s in enumerate(claim.premise_pair.item.premise.sentences) if n != claim.premise_pair.index
        ]
        assert not any(other in page for other in others)  # one caption alone
    # The validation page's wording and keys.
    for key, answer in (("1", "Definitely correct"), ("2", "Might be correct"), ("3", "Definitely incorrect")):
        assert f"<kbd>{key}</kbd> {answer}</label>" in page
    missing = client.post(response["Location"], {field_of(claims[0].premise_pair_id, worker): C})
    assert missing.status_code == 400 and PremiseLabel.objects.count() == 0
    done = client.post(response["Location"], {field_of(claim.premise_pair_id, worker): C for claim in claims})
    assert done.status_code == 302 and done["Location"] == reverse("validation:premise-next")
    assert PremiseLabel.objects.filter(worker=worker, label=C).count() == len(claims) == 2


def test_a_worker_never_sees_or_submits_another_workers_batch(client, make_worker):
    make_items(2)
    owner, other = make_worker(), make_worker()
    batch = present(services.claim_premise_batch(owner))
    claims = list(PremiseLabelClaim.objects.filter(batch=batch))
    services.submit_premise_batch(owner, batch, {claim.premise_pair_id: N for claim in claims})
    client.force_login(other.user)
    url = reverse("validation:premise-batch", args=[batch])
    assert client.get(url).status_code == 404
    assert client.post(url, {field_of(claims[0].premise_pair_id, owner): E}).status_code == 404
    with pytest.raises(BatchNotFound, match="not yours"):
        services.submit_premise_batch(other, batch, {claim.premise_pair_id: E for claim in claims})
    # The other worker's own page shows the pairs, never the labels others gave them.
    own = present(services.claim_premise_batch(other))
    assert set(PremiseLabelClaim.objects.filter(batch=own).values_list("premise_pair_id", flat=True)) == {
        claim.premise_pair_id for claim in claims
    }
    page = client.get(reverse("validation:premise-batch", args=[own])).content.decode()
    assert " checked" not in page and "consensus" not in page and "votes" not in page


# --- export and Table 4 --------------------------------------------------------------------------


def test_export_round_trip_and_table4_from_the_database_and_the_file(make_worker, tmp_path, capsys):
    golds = [E, C, N]
    dataset, items = make_items(3, golds=golds)
    spe = {0: [N, N, N, N], 1: [N, C, N, N], 2: [N, N, E, N]}  # 0, 1 and 3 agree with the gold
    for number, item in enumerate(items):
        for premise_pair in PremisePair.objects.filter(item=item).order_by("index"):
            label = spe[number][premise_pair.index]
            fill(premise_pair, [label, label, E if label != E else N], make_worker)
    table = spe_table(dataset)
    assert table.items == 3 and table.category_counts == {0: 1, 1: 1, 2: 0, 3: 1, 4: 0}
    assert table.majority_correct == 1 and table.heuristic_correct == 1  # item 2 by majority, item 1 by E<C

    out = tmp_path / "premise_labels.tsv"
    call_command("export_mpe_premise_labels", str(out), "--dataset", dataset.slug)
    captured = capsys.readouterr()
    assert "12 premise-hypothesis pairs written" in captured.out
    assert "majority voting (3 or 4 of 4): 33.3%" in captured.out and "heuristic" in captured.out
    assert "premise labels" in captured.err  # the progress bar
    text = out.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines[0].split("\t")[:5] == ["item_id", "premise_index", "premise_source", "premise", "hypothesis"]
    first = lines[1].split("\t")
    assert first[:3] == ["mpe-spe-0", "0", "0.jpg#0"] and first[5:10] == [N, N, E, N, E]
    rows = read_rows(io.StringIO(text))
    assert rows == list(premise_label_rows(dataset))
    assert dumps(rows) == text  # write(read(file)) gives the file back byte for byte
    from_file = table4_from_rows(rows)
    assert (from_file.category_counts, from_file.majority_correct, from_file.heuristic_correct) == (
        table.category_counts,
        table.majority_correct,
        table.heuristic_correct,
    )


def test_export_keeps_pairs_with_fewer_than_three_judgments_and_table4_leaves_their_items_out(make_worker, tmp_path):
    dataset, (item,) = make_items(1, golds=[E])
    fill(PremisePair.objects.get(item=item, index=0), [E], make_worker)
    rows = list(premise_label_rows(dataset))
    assert [row.judgments for row in rows] == [(E,), (), (), ()]
    assert rows[0] == PremiseLabelRow(
        "mpe-spe-0", 0, "0.jpg#0", CAPTIONS[0][:-1] + " in scene 0.", item.hypothesis, (E,), "-", E
    )
    assert read_rows(io.StringIO(dumps(rows))) == rows
    assert spe_table(dataset).items == 0 and table4_from_rows(rows).items == 0


def test_the_export_command_names_a_dataset_without_marked_items(tmp_path):
    make_items(1, mark=False)
    with pytest.raises(CommandError, match="mark_premise_labels"):
        call_command("export_mpe_premise_labels", str(tmp_path / "x.tsv"), "--dataset", "mpe-spe")


def test_the_dashboards_mpe_page_shows_table4_beside_the_papers_figures(client, researcher, make_worker):
    dataset, items = make_items(2, golds=[E, C])
    for item, spe in zip(items, ([E, E, E, N], [N, N, N, N]), strict=True):  # 3 agree; 0 agree
        for premise_pair in PremisePair.objects.filter(item=item).order_by("index"):
            fill(premise_pair, [spe[premise_pair.index]] * 3, make_worker)
    client.force_login(researcher)
    page = client.get(reverse("dashboard:mpe"), {"dataset": dataset.slug}).content.decode()
    assert 'data-stat="spe-items" data-value="2"' in page
    assert 'data-stat="spe-agree-3" data-value="0.5"' in page and 'data-stat="spe-agree-0" data-value="0.5"' in page
    assert 'data-stat="spe-majority" data-value="0.5"' in page  # item 1 by majority; item 2 has N, gold C
    assert 'data-stat="spe-heuristic" data-value="0.5"' in page  # item 1: E > C; item 2: N, gold C
    assert "21.8%" in page and "41.7%" in page
    # A worker is no researcher: the page and its figures are not theirs.
    client.force_login(make_worker().user)
    assert client.get(reverse("dashboard:mpe")).status_code in (302, 403)
