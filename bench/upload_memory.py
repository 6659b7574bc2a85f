"""Benchmark: bounded uploads. Two figures, each in a fresh subprocess so its
peak resident memory (ru_maxrss) is its own:

1. **Reading a plain-text upload without blank lines**: a file of unique one-sentence lines and no
   blank line (generated in a temporary folder, deleted afterwards) read by the premise import's
   reader (`_CountingReader` -> `premise_text.text_blocks`, every block consumed) at --text-mb
   (500 by default); the code before (premise_text as of ecc214a, from git) on --old-mb for
   comparison (it holds the file whole, so it is run on a smaller one). Then whole imports (reading,
   sentence splitting, dedup, writing to a throwaway PostgreSQL database, bench/throwaway_database.py)
   at --import-mb sizes, to show what grows with the file besides the reader.
2. **A 2 GB upload refused at the limit** through the real stack: Django's WSGI handler with the
   site's middleware (session, CSRF), the dashboard's imports view and
   base.uploads.LimitedUploadHandler, the body streamed from a generator (never held),
   UPLOAD_MAX_BYTES at its default (1 GiB). Reports the bytes the handler read from the body, the
   most bytes on disk at once under the temporary-upload folder and the uploads storage while it
   streamed, the answer and the time.

    .venv/bin/python bench/upload_memory.py [--text-mb 500] [--old-mb 50] [--import-mb 5 20] [--upload-gb 2]

The imports and the refused upload each get a fresh database (bench_upload_memory_<pid>, migrated,
dropped after) on the server DATABASE_URL names; without it the bench reruns under
scripts/with_database.py (the embedded cluster in var/postgres/).

Mind the disk (`df -h`): the text file is written once, to a temporary folder removed at the end.
"""

import argparse
import json
import os
import resource
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.throwaway_database import require_server, throwaway_database  # noqa: E402

SUBJECTS = ["The ferry", "A courier", "The old keeper", "Her sister", "The night train", "A fisherman", "The mayor"]
VERBS = ["left", "reached", "passed", "crossed", "watched", "followed", "remembered"]
PLACES = ["the harbour", "the northern coast", "the bridge", "the square", "the lighthouse", "the market"]


def write_text(path: Path, megabytes: float) -> int:
    """Unique one-sentence lines, no blank line, up to `megabytes` MB; returns the line count."""
    target, written, n = int(megabytes * 1_000_000), 0, 0
    with open(path, "w", encoding="utf-8") as handle:
        while written < target:
            line = (
                f"{SUBJECTS[n % 7]} number {n} {VERBS[(n // 7) % 7]} {PLACES[(n // 49) % 6]} "
                f"before the storm of day {n % 365}.\n"
            )
            handle.write(line)
            written += len(line)
            n += 1
    return n


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def django_setup(database_url: str | None = None) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
    os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
    os.environ.pop("CELERY_BROKER_URL", None)  # tasks in-process; nothing queued elsewhere
    if database_url is not None:
        os.environ["DATABASE_URL"] = database_url
    import django

    django.setup()


# --- the subprocesses ------------------------------------------------------------------------


def read_blocks(path: str, old: bool) -> dict:
    """Read the file as the premise import reads plain text, consuming every block."""
    django_setup()
    from collection import premise_import, premise_text

    baseline = peak_mib()
    started = time.monotonic()
    blocks = longest = 0
    with open(path, encoding="utf-8-sig") as handle:
        if old:
            namespace: dict = {}
            source = subprocess.run(
                ["git", "show", "ecc214a:collection/premise_text.py"],
                cwd=REPO,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            exec(compile(source, "premise_text@ecc214a", "exec"), namespace)
            stream = namespace["text_blocks"](handle)  # it read lines plainly
        else:
            bound = premise_text.MAX_PARAGRAPH_FACTOR * premise_text.MAX_CHARS
            held = premise_text.HeldText()
            stream = premise_text.text_blocks(premise_import._CountingReader(handle, bound), max_chars=bound, held=held)
        for block in stream:
            blocks += 1
            longest = max(longest, len(block.text))
    figures = {
        "seconds": round(time.monotonic() - started, 1),
        "blocks": blocks,
        "longest_block_chars": longest,
        "peak_rss_mib": round(peak_mib(), 1),
        "rss_before_reading_mib": round(baseline, 1),
    }
    if not old:
        figures.update(most_lines_held=held.most_lines, most_chars_held=held.most_chars)
    return figures


def whole_import(path: str, database_url: str) -> dict:
    django_setup(database_url)
    from collection.premise_import import import_premises
    from corpus.models import Genre

    genre = Genre.objects.get(slug="fiction")
    baseline = peak_mib()
    started = time.monotonic()
    report = import_premises([path], genre, "upload-bench")
    return {
        "seconds": round(time.monotonic() - started, 1),
        "read": report.read,
        "kept": report.kept,
        "most_lines_held": report.held.most_lines,
        "peak_rss_mib": round(peak_mib(), 1),
        "rss_before_import_mib": round(baseline, 1),
    }


class StreamedBody:
    """A multipart body produced as it is read (never held): the form's fields, then `size` bytes
    of file. Counts what the server read, and samples the disk under `watched` as it goes."""

    def __init__(self, fields: dict[str, str], file_name: str, size: int, watched: list[Path]) -> None:
        self.boundary = "----uploadbench" + secrets.token_hex(8)
        head = "".join(
            f'--{self.boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'
            for name, value in fields.items()
        )
        head += (
            f'--{self.boundary}\r\nContent-Disposition: form-data; name="file"; filename="{file_name}"\r\n'
            "Content-Type: text/plain\r\n\r\n"
        )
        self.head, self.tail = head.encode(), f"\r\n--{self.boundary}--\r\n".encode()
        self.size, self.length = size, len(self.head) + size + len(self.tail)
        self.position, self.watched, self.most_on_disk, self.next_sample = 0, watched, 0, 0
        self.chunk = (b"A sentence of the upload that is far too large.\n" * 1400)[: 1 << 16]

    def _bytes_at(self, start: int, count: int) -> bytes:
        out = bytearray()
        while count > 0 and start < self.length:
            if start < len(self.head):
                piece = self.head[start : start + count]
            elif start < len(self.head) + self.size:
                offset = (start - len(self.head)) % len(self.chunk)
                piece = self.chunk[offset : offset + min(count, len(self.head) + self.size - start)]
            else:
                piece = self.tail[start - len(self.head) - self.size :][:count]
            out += piece
            start += len(piece)
            count -= len(piece)
        return bytes(out)

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            size = self.length - self.position
        data = self._bytes_at(self.position, size)
        self.position += len(data)
        if self.position >= self.next_sample:  # every 64 MiB: what is on disk now
            self.most_on_disk = max(self.most_on_disk, sum(_disk_bytes(folder) for folder in self.watched))
            self.next_sample = self.position + (64 << 20)
        return data

    def readline(self, size: int = -1) -> bytes:
        """Up to the next newline, as a server's body stream reads (never the rest of the body at once)."""
        line = bytearray()
        while size < 0 or len(line) < size:
            piece = self.read(min(256, size - len(line)) if size >= 0 else 256)
            if not piece:
                break
            cut = piece.find(b"\n")
            if cut >= 0:
                line += piece[: cut + 1]
                self.position -= len(piece) - cut - 1
                break
            line += piece
        return bytes(line)


def _disk_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file()) if folder.exists() else 0


def refused_upload(gigabytes: float, database_url: str, workdir: str) -> dict:
    temporary = Path(workdir) / "django-tmp"
    temporary.mkdir()
    os.environ["DATA_DIR"] = str(Path(workdir) / "data")
    os.environ["DEBUG"] = "1"  # no HTTPS redirect; the stack is the same
    django_setup(database_url)
    from django.conf import settings
    from django.core.handlers.wsgi import WSGIHandler
    from django.test import Client

    settings.FILE_UPLOAD_TEMP_DIR = str(temporary)
    settings.ALLOWED_HOSTS = ["*"]
    from django.contrib.auth import get_user_model

    from base.file_storage import local_folder
    from collection.models import PremiseImport

    get_user_model().objects.create_superuser("bench", password="bench-pass-1")
    client = Client()
    client.login(username="bench", password="bench-pass-1")
    client.get("/dashboard/imports/")
    cookies = "; ".join(f"{name}={morsel.value}" for name, morsel in client.cookies.items())
    body = StreamedBody(
        {"csrfmiddlewaretoken": client.cookies["csrftoken"].value, "kind": "premises", "genre": "fiction"},
        "two_gigabytes.txt",
        int(gigabytes * 1_000_000_000),
        [temporary, local_folder("uploads")],
    )
    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/dashboard/imports/",
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "HTTP_HOST": "testserver",
        "wsgi.url_scheme": "http",
        "wsgi.input": body,
        "wsgi.errors": sys.stderr,
        "CONTENT_TYPE": f"multipart/form-data; boundary={body.boundary}",
        "CONTENT_LENGTH": str(body.length),
        "HTTP_COOKIE": cookies,
    }
    answer: dict = {}

    def start_response(
        status: str, headers: list[tuple[str, str]], exc_info: object = None
    ) -> Callable[[bytes], object]:
        answer.update(status=status, headers=dict(headers))
        for name, value in headers:
            if name.lower() == "set-cookie":
                client.cookies.load(value)  # the message waits in a cookie or the session
        return lambda data: None

    started = time.monotonic()
    response = WSGIHandler()(environ, start_response)
    seconds = time.monotonic() - started
    response.close()
    page = client.get(answer["headers"].get("Location", "/dashboard/imports/")).content.decode()
    message = next((line.strip() for line in page.splitlines() if "larger than the upload limit" in line), "")
    return {
        "upload_bytes": body.size,
        "limit_bytes": settings.UPLOAD_MAX_BYTES,
        "answer": answer["status"],
        "seconds": round(seconds, 1),
        "body_bytes_read": body.position,
        "most_bytes_on_disk_while_streaming": body.most_on_disk,
        "on_disk_after": _disk_bytes(temporary) + _disk_bytes(local_folder("uploads")),
        "import_rows": PremiseImport.objects.count(),
        "message_on_the_page": message,
        "peak_rss_mib": round(peak_mib(), 1),
    }


# --- the driver ------------------------------------------------------------------------------


def in_subprocess(*args: str) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--child", *args], cwd=REPO, capture_output=True, text=True, check=False
    )
    if done.returncode:
        raise SystemExit(f"{args[0]} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--text-mb", type=float, default=500)
    parser.add_argument("--old-mb", type=float, default=50)
    parser.add_argument("--import-mb", type=float, nargs="*", default=[5, 20])
    parser.add_argument("--upload-gb", type=float, default=2)
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        kind, *rest = options.child
        figures = {
            "read": lambda: read_blocks(rest[0], old=rest[1] == "old"),
            "import": lambda: whole_import(rest[0], rest[1]),
            "refuse": lambda: refused_upload(float(rest[0]), rest[1], rest[2]),
        }[kind]()
        print(json.dumps(figures))
        return
    if options.import_mb or options.upload_gb:
        require_server()  # the imports and the refused upload write to a database
    with tempfile.TemporaryDirectory(prefix="upload-bench-") as folder:
        work = Path(folder)
        text = work / "no_blank_lines.txt"
        if options.text_mb:
            lines = write_text(text, options.text_mb)
            print(f"reader, {text.stat().st_size / 1e6:.0f} MB without blank lines ({lines} lines):", flush=True)
            print("  now:   ", in_subprocess("read", str(text), "new"), flush=True)
            text.unlink()
        if options.old_mb:
            lines = write_text(text, options.old_mb)
            print(f"reader before (ecc214a), {options.old_mb:.0f} MB ({lines} lines):", flush=True)
            print("  before:", in_subprocess("read", str(text), "old"), flush=True)
            text.unlink()
        for megabytes in options.import_mb:
            lines = write_text(text, megabytes)
            print(f"whole import, {megabytes:.0f} MB ({lines} lines), PostgreSQL:", flush=True)
            with throwaway_database("upload_memory") as database_url:
                print("  ", in_subprocess("import", str(text), database_url), flush=True)
            text.unlink()
        if options.upload_gb:
            refuse = work / "refuse"
            refuse.mkdir()
            print(
                f"{options.upload_gb:g} GB upload through the imports view, UPLOAD_MAX_BYTES at its default:",
                flush=True,
            )
            with throwaway_database("upload_memory") as database_url:
                print("  ", in_subprocess("refuse", str(options.upload_gb), database_url, str(refuse)))


if __name__ == "__main__":
    main()
