"""The files a snapshot holds beside the pairs' that other apps keep, registered at start.

MPE's per-premise labels live in validation, an app of this layer that modeling must not import.
Modeling declares what it calls (`ExtraFiles`: a writer called with the snapshot's datasets,
filters and folder, which writes its files there and returns {file name: rows}, nothing: no
file), and the composition root (`annotation_site.wiring.register`, from
`annotation_site.apps.SiteConfig.ready`, in every process) registers the writers here; the
export hashes what they wrote and lists it in the manifest like the split files.

An export in a process that never registered them fails loudly rather than leaving a file out.
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
