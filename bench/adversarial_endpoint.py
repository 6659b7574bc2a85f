"""The adversarial task's prediction endpoint: p50/p99 server side, against the login page in the same run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nli_bench .venv/bin/python bench/adversarial_endpoint.py \
        [--tries 1000] [--vocab 100000] [--train-pairs 1000]

What it times: POST /adversarial/<task>/try/ (Accept: application/json) through Django's full
stack in this process (middleware, session, the worker's claim and row lock, the writing checks,
the rate limit in the cache, the target's CPU inference, the try's INSERT), a worker's session as
the study link makes it; and GET /accounts/login/ (a template, no query), the baseline, in the same
run. Each try is a new SNLI dev hypothesis on an SNLI dev premise. A fooled try's reason and the
next claim happen between timed requests. The first request (the checkpoint's load and SHA-256
check, once per process) is reported apart.

The target: ESIM with the platform's default dimensions (300-d embeddings, 300-d hidden states,
as the 433k-trained checkpoint has), its vocabulary padded to `--vocab` entries (a MultiNLI-train
vocabulary's order of size), trained briefly (one epoch over `--train-pairs` SNLI dev pairs) and
saved in the training loop's checkpoint format; a real run's checkpoint of the same dimensions
costs the same per pair (the embedding lookup does not grow with the vocabulary). Loads rows into
the database it is pointed at (a study, a round, premises); the checkpoint goes to a temp folder.
"""

import argparse
import hashlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
os.environ.setdefault("DEBUG", "1")  # no SECRET_KEY needed; the query log is off below
SNLI_DEV = Path(os.environ.get("NLI_SHARED_DATA", ROOT.parent / "shared" / "data")) / "snli_1.0_dev.jsonl"


def snli_rows():
    rows = []
    with open(SNLI_DEV, encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if row["gold_label"] in ("entailment", "neutral", "contradiction"):
                rows.append(row)
    return rows


def brief_esim(rows, vocab_size, train_pairs, folder):
    """An ESIM of the default dimensions, trained for one epoch on `train_pairs` rows, as a checkpoint file."""
    import torch

    from modeling.nets import build_net
    from modeling.training.config import resolve_config
    from modeling.training.data import Vocab, example_from_row, make_batches

    config = resolve_config("esim", {"epochs": 1})
    examples = [example_from_row(row, "train") for row in rows[:train_pairs]]
    vocab = Vocab.build(examples)
    vocab.itos += [f"<filler{i}>" for i in range(max(0, vocab_size - len(vocab.itos)))]
    vocab.stoi = {word: i for i, word in enumerate(vocab.itos)}
    for ex in examples:
        ex.premise_ids = vocab.encode(ex.premise, config.get("max_len"))
        ex.hypothesis_ids = vocab.encode(ex.hypothesis, config.get("max_len"))
    hyper = {k: config[k] for k in ("embedding_dim", "hidden_dim", "dropout")}
    net = build_net("esim", len(vocab), **hyper)
    optimizer = torch.optim.Adam(net.parameters(), lr=config["lr"])
    net.train()
    started = time.perf_counter()
    for batch in make_batches(examples, 32):
        optimizer.zero_grad()
        logits = net(batch.premise, batch.premise_lengths, batch.hypothesis, batch.hypothesis_lengths)
        loss = torch.nn.functional.cross_entropy(logits, batch.labels)
        loss.backward()
        optimizer.step()
    print(
        f"ESIM {hyper} vocab {len(vocab):,}: one epoch over {len(examples):,} pairs in {time.perf_counter() - started:.0f} s"
    )
    from modeling.training.checkpoint import write_checkpoint

    return write_checkpoint(
        Path(folder) / "bench-esim.safetensors",
        model="esim",
        config=config,
        epoch=1,
        vocab=vocab.itos,
        labels=["entailment", "neutral", "contradiction"],
        state_dict=net.state_dict(),
    )


def setup_study(checkpoint, rows, premises):
    from adversarial.models import AdversarialStudy, Round
    from base.long_tasks import JobStatus
    from corpus.models import Dataset, Genre, Premise, Split
    from crowd.models import Study, TaskKind
    from modeling.models import RunStatus, Snapshot, TrainingRun

    tag = f"bench-adv-{int(time.time())}"
    snapshot = Snapshot.objects.create(status=JobStatus.DONE, directory="", content_hash="bench")
    run = TrainingRun.objects.create(
        snapshot=snapshot,
        snapshot_hash="bench",
        model="esim",
        status=RunStatus.DONE,
        checkpoint_path=str(checkpoint),
        checkpoint_sha256=hashlib.sha256(checkpoint.read_bytes()).hexdigest(),
    )
    dataset = Dataset.objects.create(slug=tag, name=tag)
    genre = Genre.objects.order_by("slug").first()
    seen = []
    for row in rows:
        if row["sentence1"] not in seen:
            seen.append(row["sentence1"])
        if len(seen) == premises:
            break
    Premise.objects.bulk_create(
        Premise(dataset=dataset, genre=genre, split=Split.TRAIN, prompt_id=f"b{i}", text=text)
        for i, text in enumerate(seen)
    )
    study = Study.objects.create(
        slug=tag, name=tag, dataset=dataset, task_kind=TaskKind.ADVERSARIAL, tasks_per_batch=10000, completion_code="B"
    )
    AdversarialStudy.objects.create(study=study, max_tries=20, tries_per_minute=30000)
    Round.objects.create(study=study, number=1, dataset=dataset, target_run=run)
    return study


def percentiles(times):
    times = sorted(times)
    return statistics.median(times), times[max(0, int(0.99 * len(times)) - 1)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=1000)
    parser.add_argument("--vocab", type=int, default=100_000)
    parser.add_argument("--train-pairs", type=int, default=1000)
    parser.add_argument("--checkpoint", help="reuse a checkpoint this script wrote before (skips the brief training)")
    args = parser.parse_args()

    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client
    from django.test.utils import setup_test_environment

    from adversarial.models import AdversarialTask, AdversarialTry, TaskState
    from corpus.models import Worker
    from crowd import arrival
    from crowd.models import StudySession

    setup_test_environment()  # the test Client's hooks; DEBUG's query log stays off
    from django.conf import settings

    settings.DEBUG = False
    call_command("migrate", verbosity=0)
    rows = snli_rows()
    folder = tempfile.mkdtemp()
    reuse = Path(args.checkpoint) if args.checkpoint else None
    checkpoint = reuse or brief_esim(rows, args.vocab, args.train_pairs, folder)
    study = setup_study(checkpoint, rows, premises=max(50, args.tries // 5))

    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_user(username=f"{study.slug}-worker", password="x")
    worker = Worker.objects.create(user=user)
    session = StudySession.objects.create(study=study, worker=worker, external_session_id="bench")
    client = Client()
    client.force_login(user)
    browser = client.session
    browser[arrival.SESSION_KEY] = session.pk
    browser.save()

    def next_task():
        client.get("/adversarial/next/")
        return AdversarialTask.objects.get(worker=worker, state=TaskState.WRITING)

    hypotheses = [row["sentence2"] for row in rows]
    task = next_task()
    timings, first = [], None
    for i in range(args.tries + 1):
        started = time.perf_counter()
        response = client.post(
            f"/adversarial/{task.writing_claim.token}/try/",
            {"hypothesis": hypotheses[i % len(hypotheses)]},
            HTTP_ACCEPT="application/json",
        )
        elapsed = 1000 * (time.perf_counter() - started)
        if response.status_code == 400:  # a hypothesis the checks refuse (e.g. one tried before): not a try
            continue
        assert response.status_code == 200, response.content
        if first is None:
            first = elapsed
        else:
            timings.append(elapsed)
        answer = response.json()
        if answer["model_fooled"]:
            client.post(f"/adversarial/{task.writing_claim.token}/reason/", {"reason": "bench reason"})
        if answer["model_fooled"] or answer["task_done"]:
            task = next_task()
    login = []
    for _ in range(500):
        started = time.perf_counter()
        assert Client().get("/accounts/login/").status_code == 200
        login.append(1000 * (time.perf_counter() - started))
    model_ms = [
        1000 * s for s in AdversarialTry.objects.filter(round__study=study).values_list("model_seconds", flat=True)
    ]
    try_p50, try_p99 = percentiles(timings)
    login_p50, login_p99 = percentiles(login)
    model_p50, model_p99 = percentiles(model_ms[1:])
    import torch

    print(
        f"torch threads {torch.get_num_threads()}, database {settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}"
    )
    print(f"first try (checkpoint read, SHA-256 checked, loaded): {first:.0f} ms")
    print(f"try endpoint ({len(timings)} tries): p50 {try_p50:.1f} ms, p99 {try_p99:.1f} ms")
    print(f"  of which the model (AdversarialTry.model_seconds): p50 {model_p50:.1f} ms, p99 {model_p99:.1f} ms")
    print(f"login page (500): p50 {login_p50:.1f} ms, p99 {login_p99:.1f} ms")
    print(f"ratio try / login: p50 {try_p50 / login_p50:.1f}x, p99 {try_p99 / login_p99:.1f}x")


if __name__ == "__main__":
    main()
