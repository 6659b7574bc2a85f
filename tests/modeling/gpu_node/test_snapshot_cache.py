"""The GPU node's snapshot cache and download client, against a small HTTP server that misbehaves on demand.

No Django here: a node fetches with modeling/training/remote.py and snapshot_cache.py alone.
"""

import hashlib
import http.server
import threading
from pathlib import Path

import pytest

from modeling.snapshots.format import SnapshotError, build_manifest, write_manifest
from modeling.training.remote import PlatformClient
from modeling.training.snapshot_cache import SnapshotCache
from modeling.training.synthetic import synthetic_rows
from tests.modeling.training_fixtures import write_snapshot_files


class FileServer(http.server.ThreadingHTTPServer):
    """Serves <root>/<snapshot id>/<name> at /api/snapshots/<id>/files/<name> with Range, like the platform.

    `cut_after[name] = n` sends only n bytes of that file once (then drops the connection);
    every request is logged as (name, Range header, Authorization header).
    """

    def __init__(self, root):
        self.root = Path(root)
        self.cut_after = {}
        self.requests = []
        super().__init__(("127.0.0.1", 0), Handler)


class Handler(http.server.BaseHTTPRequestHandler):
    server: FileServer

    def log_message(self, *args):
        pass

    def do_GET(self):
        _, _, _, snapshot_id, _, name = self.path.split("/", 5)
        self.server.requests.append((name, self.headers.get("Range"), self.headers.get("Authorization")))
        path = self.server.root / snapshot_id / name
        if not path.is_file():
            self.send_error(404)
            return
        data = path.read_bytes()
        start = 0
        if self.headers.get("Range"):
            start = int(self.headers["Range"].split("=")[1].rstrip("-"))
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        cut = self.server.cut_after.pop(name, None)
        if cut is not None:
            self.wfile.write(body[:cut])
            self.wfile.flush()
            self.connection.shutdown(2)  # the network goes away mid-file
            return
        self.wfile.write(body)


@pytest.fixture
def server(tmp_path):
    served = FileServer(tmp_path / "platform")
    thread = threading.Thread(target=served.serve_forever, daemon=True)
    thread.start()
    yield served
    served.shutdown()
    served.server_close()


def publish(server, snapshot_id, seed, n=400):
    """A snapshot folder (JSONL + TSV twins) under the server's root; its content hash."""
    folder = server.root / str(snapshot_id)
    write_snapshot_files(folder, {"train": synthetic_rows(n, seed=seed), "dev": synthetic_rows(n // 4, seed=seed + 1)})
    (folder / "train.tsv").write_text("gold_label\tsentence1\n" * n)
    files = []
    for path in sorted(folder.iterdir()):
        if path.name != "manifest.json":
            files.append(
                {
                    "name": path.name,
                    "split": path.stem,
                    "rows": 0,
                    "bytes": path.stat().st_size,
                    "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                }
            )
    manifest = build_manifest(snapshot_id, [], {}, n, files)
    write_manifest(folder, manifest)
    return manifest["content_hash"]


def fetcher(server, snapshot_id, client=None):
    client = client or PlatformClient(f"http://127.0.0.1:{server.server_port}", "nliw_key", backoff=0.01)
    return lambda name, part: client.download(f"api/snapshots/{snapshot_id}/files/{name}", part)


def test_a_fetch_verifies_keeps_only_training_files_and_the_second_use_is_a_cache_hit(server, tmp_path):
    content = publish(server, 1, seed=1)
    cache = SnapshotCache(tmp_path / "node-cache", max_bytes=10**9)
    folder, report = cache.get(content, fetcher(server, 1))
    assert report["source"] == "download"
    assert sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")) == [
        "dev.jsonl",
        "manifest.json",
        "train.jsonl",
    ]
    assert report["bytes_downloaded"] == sum(
        (server.root / "1" / n).stat().st_size for n in ("dev.jsonl", "manifest.json", "train.jsonl")
    )
    assert all(auth == "Worker nliw_key" for _, _, auth in server.requests)
    server.requests.clear()
    again, report = cache.get(content, fetcher(server, 1))
    assert again == folder and report["source"] == "cache" and server.requests == []


def test_an_interrupted_download_resumes_where_it_stopped(server, tmp_path):
    content = publish(server, 2, seed=2, n=2000)
    size = (server.root / "2" / "train.jsonl").stat().st_size
    server.cut_after["train.jsonl"] = size // 3
    folder, report = SnapshotCache(tmp_path / "cache", 10**9).get(content, fetcher(server, 2))
    assert (folder / "train.jsonl").read_bytes() == (server.root / "2" / "train.jsonl").read_bytes()
    train_requests = [rng for name, rng, _ in server.requests if name == "train.jsonl"]
    assert train_requests[0] is None and train_requests[1] == f"bytes={size // 3}-"
    # The first third never came down twice: every byte of the three files was received once.
    assert report["bytes_downloaded"] == sum(
        (server.root / "2" / n).stat().st_size for n in ("dev.jsonl", "manifest.json", "train.jsonl")
    )


def test_a_leftover_part_that_is_not_a_prefix_restarts_the_file(server, tmp_path):
    content = publish(server, 3, seed=3)
    cache = SnapshotCache(tmp_path / "cache", 10**9)
    incoming = cache.root / f".incoming-{content}"
    incoming.mkdir(parents=True)
    (incoming / "train.jsonl.part").write_bytes(b"garbage left by another try\n")
    folder, _ = cache.get(content, fetcher(server, 3))
    assert (folder / "train.jsonl").read_bytes() == (server.root / "3" / "train.jsonl").read_bytes()
    assert not incoming.exists()


def test_a_file_that_differs_from_the_manifest_fails_with_its_name_and_is_not_cached(server, tmp_path):
    content = publish(server, 4, seed=4)
    with open(server.root / "4" / "dev.jsonl", "a") as handle:
        handle.write('{"sentence1": "tampered", "sentence2": "x", "gold_label": "neutral"}\n')
    cache = SnapshotCache(tmp_path / "cache", 10**9)
    with pytest.raises(SnapshotError, match=r"hash mismatch: dev\.jsonl does not match its sha256"):
        cache.get(content, fetcher(server, 4))
    assert not (cache.root / content).exists()
    assert not list((cache.root / f".incoming-{content}").glob("dev.jsonl*"))


def test_a_manifest_for_another_snapshot_is_refused(server, tmp_path):
    publish(server, 5, seed=5)
    with pytest.raises(SnapshotError, match="does not give the content hash"):
        SnapshotCache(tmp_path / "cache", 10**9).get("ab" * 32, fetcher(server, 5))


def test_least_recently_used_snapshots_are_evicted_beyond_the_size_limit(server, tmp_path):
    hashes = [publish(server, i, seed=10 + i) for i in (6, 7, 8)]
    cache = SnapshotCache(tmp_path / "cache", max_bytes=10**9)
    for snapshot_id, content in zip((6, 7), hashes, strict=False):
        cache.get(content, fetcher(server, snapshot_id))
    one_size = max(size for _, size, _ in cache.entries())
    cache.get(hashes[0], fetcher(server, 6))  # 6 is now more recently used than 7
    cache.max_bytes = int(one_size * 2.5)
    cache.get(hashes[2], fetcher(server, 8))
    assert {name for _, _, name in cache.entries()} == {hashes[0], hashes[2]}
    assert sum(size for _, size, _ in cache.entries()) <= cache.max_bytes
