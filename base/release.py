"""Which release of the code is running, as a digest of its source.

Values kept in the shared cache between requests (the dashboard's figures, its pair form) have the
shape the code that stored them gave them. After a deploy, or while hosts run two releases side by
side during one, a value stored by the other release may lack a key or an attribute the running code
reads. Keys that carry the release are never read across releases: each release computes its own,
and hosts running the same code share theirs.
"""

import hashlib
from functools import cache
from pathlib import Path

from django.apps import apps
from django.conf import settings


def source_digest(root: Path, folders: list[Path]) -> str:
    """A digest of every Python file under `folders`, by its path below `root` and its bytes."""
    digest = hashlib.sha256()
    for folder in sorted(folders):
        for path in sorted(folder.rglob("*.py")):
            digest.update(path.relative_to(root).as_posix().encode())
            digest.update(b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


@cache
def source_release() -> str:
    """The digest of the project's own apps (those under BASE_DIR), once per process."""
    root = Path(settings.BASE_DIR).resolve()
    folders = [Path(config.path).resolve() for config in apps.get_app_configs()]
    return source_digest(root, [folder for folder in folders if folder.is_relative_to(root)])
