#!/usr/bin/env python
import os
import sys
from collections.abc import MutableMapping


def choose_embedded_tasks(argv: list[str], environ: MutableMapping[str, str]) -> None:
    """Without a broker, the development server runs jobs in a background thread (a page must never
    wait for an export or a training run); other commands run them inline and print their outcome."""
    if argv[1:2] == ["runserver"]:
        environ.setdefault("EMBEDDED_TASKS", "background")


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
    choose_embedded_tasks(sys.argv, os.environ)
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as refusal:
        # A settings refusal (DEBUG off without a real SECRET_KEY, say) is an instruction for the
        # person at the terminal, not a bug: its one line says what to set, a traceback would bury it.
        sys.exit(f"ImproperlyConfigured: {refusal}")


if __name__ == "__main__":
    main()
