"""SNLI dev (10k pairs) as a small train/dev/test corpus, split by premise, then a snapshot of it.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nli_training \\
        .venv/bin/python bench/snli_dev_split.py ../shared/data/snli_1.0_dev.jsonl [--dataset snli-dev-split]

Through the platform itself: `importers.services.import_pairs_file` imports every row (as train),
then each premise (captionID) goes to train / dev / test 80/10/10 by a hash of its captionID, so
no premise crosses splits and the same file always gives the same splits; finally
`create_snapshot` + `export_snapshot` write the snapshot folder. Prints the snapshot id for
`manage.py train --snapshot ID`.

    .venv/bin/python bench/snli_dev_split.py FILE --direct OUT_DIR

writes the same split straight to a snapshot-format folder (train/dev/test.jsonl + manifest.json)
without a database, e.g. for `loop.train` from a notebook.
"""

import argparse
import hashlib
import json
import os
import secrets
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SHARES = (("train", 80), ("dev", 90), ("test", 100))


def split_of(caption_id):
    bucket = int(hashlib.sha256(caption_id.encode()).hexdigest(), 16) % 100
    return next(split for split, upper in SHARES if bucket < upper)


def direct(source, out):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=False)
    rows: dict[str, list[str]] = {split: [] for split, _ in SHARES}
    with open(source, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                row = json.loads(line)
                row.setdefault("genre", "captions")
                row.setdefault("promptID", row.get("captionID", ""))
                rows[split_of(row["promptID"])].append(line if line.endswith("\n") else line + "\n")
    files: list[dict[str, Any]] = []
    for split, lines in rows.items():
        data = "".join(lines).encode()
        (out / f"{split}.jsonl").write_bytes(data)
        files.append(
            {
                "name": f"{split}.jsonl",
                "split": split,
                "rows": len(lines),
                "bytes": len(data),
                "sha256": hashlib.sha256(data).hexdigest(),
            }
        )
    from modeling.snapshots.format import content_hash

    digest = content_hash({f["name"]: f["sha256"] for f in files})
    (out / "manifest.json").write_text(json.dumps({"files": files, "content_hash": digest}, indent=2))
    for f in files:
        print(f"{f['name']}: {f['rows']} pairs")
    print(f"content hash {digest}")


def via_platform(source, slug):
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
    # DEBUG stays off as in production (no query log): a throwaway key of the run's own.
    os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
    import django

    django.setup()
    from django.db import transaction

    from corpus.models import Premise
    from importers.services import import_pairs_file
    from modeling.snapshots.services import create_snapshot, export_snapshot

    report = import_pairs_file(source, slug, split="train", progress=True)
    print(report.summary() if hasattr(report, "summary") else report)
    with transaction.atomic():
        premises = list(Premise.objects.filter(dataset__slug=slug).only("pk", "prompt_id", "split"))
        for premise in premises:
            premise.split = split_of(premise.prompt_id)
        Premise.objects.bulk_update(premises, ["split"], batch_size=2000)
    counts = {split: sum(p.split == split for p in premises) for split, _ in SHARES}
    print(f"premises per split: {counts}")
    snapshot = create_snapshot(None, datasets=[slug])
    export_snapshot(snapshot)
    snapshot.refresh_from_db()
    print(
        f"snapshot {snapshot.pk}: {snapshot.status} {snapshot.directory} ({snapshot.row_count} rows) "
        f"{', '.join(f'{f.name}={f.rows}' for f in snapshot.files.all() if f.name.endswith('.jsonl'))}"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source")
    parser.add_argument("--dataset", default="snli-dev-split")
    parser.add_argument("--direct", metavar="OUT_DIR", help="write the folder directly, no database")
    args = parser.parse_args()
    if args.direct:
        direct(args.source, args.direct)
    else:
        via_platform(args.source, args.dataset)


if __name__ == "__main__":
    main()
