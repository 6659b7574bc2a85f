"""The worker tally beside validators who keep submitting (PostgreSQL, real concurrent transactions).

Every writer reads a pair's worker figures before and after its change under the pair's row lock
and appends the difference (corpus.worker_tally): validators labelling the same pairs at once wait
only for each other's pair locks, and an exclusion, which locks every pair its worker labelled
(after the worker's row, as a submit locks them), moves those pairs' figures in between. Whatever
the interleaving, the tally equals the truth grouped from the labels.
"""

import contextlib
import random
import threading

import pytest
from django.contrib.auth.models import User
from django.db import connections

from corpus import tallies, worker_tally
from corpus.exclusions import set_workers_excluded
from corpus.models import Pair, Worker
from corpus.services import LabelRefused, add_labels
from teams.models import default_team_id
from tests import factories

pytestmark = [pytest.mark.django_db(transaction=True)]

LABELS = ["entailment", "neutral", "contradiction"]


def test_submits_beside_exclusions_leave_the_worker_tally_equal_to_the_truth():
    dataset = factories.dataset("tally-race")
    premise = factories.premise(dataset)
    pairs = [factories.pair(dataset, premise, [LABELS[number % 3]]) for number in range(40)]
    crowd = [Worker.objects.create(user=User.objects.create(username=f"race{n}")) for n in range(5)]
    excluded = crowd[0]
    add_labels([(pair, LABELS[pair.pk % 3]) for pair in pairs], worker=excluded, seconds=3.0)
    start, errors, reports = threading.Barrier(len(crowd)), [], []

    def submit(worker, seed):
        rng = random.Random(seed)
        try:
            start.wait()
            for _ in range(12):
                batch = [Pair.objects.get(pk=pair.pk) for pair in rng.sample(pairs, 4)]
                with contextlib.suppress(LabelRefused):
                    add_labels([(pair, rng.choice(LABELS)) for pair in batch], worker=worker, seconds=rng.uniform(2, 9))
        except Exception as error:
            errors.append(repr(error))
        finally:
            connections.close_all()

    def exclude_and_readmit():
        try:
            start.wait()
            for excluding in (True, False, True):
                outcome = set_workers_excluded(
                    Worker.objects.filter(pk=excluded.pk), excluding, teams=[default_team_id()]
                )
                reports.append(outcome.changed)
        except Exception as error:
            errors.append(repr(error))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=submit, args=(worker, n)) for n, worker in enumerate(crowd[1:])]
    threads.append(threading.Thread(target=exclude_and_readmit))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert errors == []
    # Each exclusion and its recount moved the tally as the submits beside them did: nothing to rebuild.
    assert reports == [1, 1, 1]
    final = tallies.check_and_rebuild(None, worker_tally.TALLY, repair=False)
    assert (final.keys, final.examples) == (0, [])
