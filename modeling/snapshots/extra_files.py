"""The files a snapshot holds beside the pairs' that other apps keep, registered at start.

MPE's per-premise labels live in validation, an app modeling must not import. `ExtraFiles` is
called with the snapshot's datasets, filters and folder, writes its files there and returns
{file name: rows}; the composition root (`annotation_site.wiring.register`, in every process)
registers the writers, and an export in a process that never did fails rather than leave a file out.
"""

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from django.core.exceptions import ImproperlyConfigured

ExtraFiles = Callable[[Sequence[str], Mapping[str, Any], Path], Mapping[str, int]]

_registered: list[tuple[ExtraFiles, ...]] = []


def register(writers: Sequence[ExtraFiles]) -> None:
    """Register the writers (the composition root, at start); a second call replaces the first."""
    _registered[:] = [tuple(writers)]


def registered() -> tuple[ExtraFiles, ...]:
    if not _registered:
        raise ImproperlyConfigured(
            "No snapshot file writers are registered: annotation_site.apps.SiteConfig must be in INSTALLED_APPS."
        )
    return _registered[0]
