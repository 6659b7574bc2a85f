"""The composition root's wiring of a worker's way through a study (docs/architecture.md).

The crowd layer runs studies of every kind of task but sits beneath the apps that serve the tasks
(collection, validation, adversarial) and the app that judges who may take them (quality). What it
must know of them is wired here, beside settings.py and urls.py: the composition root, the one
place that names every app by design (tests/test_layering.py leaves these three modules out and
sees every arrow into them). Crowd's pages and the qualification page import what they need from
here; the apps above call crowd and quality plainly.

- `NEXT_TASK_URL`: the URL name of the next task of a study of each kind (crowd.TaskKind);
- `admission_refusal(study, worker)`: crowd's own rules (open, closed list) and, for studies with
  access "qualified", the quality app's qualification test;
- `worker_marks(worker_ids)` and `completion_rows(studies)`: the approval and bonus lists' marks,
  crowd's own ("excluded") and the quality app's flags.
"""

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from crowd import access, selectors
from crowd.models import TaskKind
from quality.qualification import admission_check
from quality.selectors import flag_marks

if TYPE_CHECKING:
    from corpus.models import Worker
    from crowd.models import Study

NEXT_TASK_URL: dict[str, str] = {
    TaskKind.WRITING: "writing_next",
    TaskKind.VALIDATION: "validation:next",
    TaskKind.MPE_JUDGMENT: "validation:mpe-next",
    TaskKind.ADVERSARIAL: "adversarial:next",
    TaskKind.PREMISE_LABELS: "validation:premise-next",
}
# DNC's grammaticality task, offered on the home page beside a validation study's batches.
GRAMMATICALITY_URL = "validation:grammaticality"


def admission_refusal(study: "Study", worker: "Worker | None") -> access.Refusal | None:
    """None when `worker` may work on `study` now, else the crowd.access.Refusal to show (or follow)."""
    return access.admission_refusal(study, worker, qualification_check=admission_check)


def worker_marks(worker_ids: Iterable[int]) -> dict[int, list[str]]:
    """{worker pk: [words]}: "excluded", and the quality app's flags, for a list a researcher pays from."""
    return selectors.worker_marks(worker_ids, flagged=flag_marks)


def completion_rows(studies: Iterable["Study"]) -> Iterator[list[Any]]:
    """The completed sessions' CSV rows, their workers marked (`worker_marks`)."""
    return selectors.completion_rows(studies, flagged=flag_marks)
