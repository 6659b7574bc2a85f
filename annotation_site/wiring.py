"""The composition root's wiring of a worker's way through a study (docs/architecture.md).

The crowd layer runs studies of every kind of task but sits beneath the apps that serve the tasks
(collection, validation, adversarial) and the app that judges who may take them (quality). What it
must know of them is wired here, beside settings.py and urls.py: the composition root, the one
place that names every app by design (tests/test_layering.py leaves these three modules out and
sees every arrow into them). Crowd's pages and the qualification page import what they need from
here; the apps above call crowd and quality plainly.

- `NEXT_TASK_URL`: the URL name of the next task of a study of each kind (crowd.TaskKind);
- `admission_refusal(study, worker)`: crowd's own rules (open, closed list) and, for studies with
  access "qualified", the quality app's qualification test.
"""

from typing import TYPE_CHECKING

from crowd import access
from crowd.models import TaskKind
from quality.qualification import admission_check

if TYPE_CHECKING:
    from corpus.models import Worker
    from crowd.models import Study

NEXT_TASK_URL: dict[str, str] = {
    TaskKind.WRITING: "writing_next",
    TaskKind.VALIDATION: "validation:next",
    TaskKind.MPE_JUDGMENT: "validation:mpe-next",
    TaskKind.ADVERSARIAL: "adversarial:next",
}


def admission_refusal(study: "Study", worker: "Worker | None") -> access.Refusal | None:
    """None when `worker` may work on `study` now, else the crowd.access.Refusal to show (or follow)."""
    return access.admission_refusal(study, worker, qualification_check=admission_check)
