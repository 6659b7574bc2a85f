"""A study's pre-launch check: in words, what would make it serve nothing or mislead once its link
is on a market. Read-only: nothing here calls the market (its last answer is read).

A `Finding` is "block" (no task, no way to pay, or unverified ids paid), "unverified" (a paid study
opened unverified on purpose, shown in red), "warn" (it serves, not as expected) or "info"."""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from django.conf import settings

from consent.defaults import placeholders_left
from consent.models import InformationSheet
from consent.selectors import current_sheet
from crowd.arrival import is_paid, launch_refusal
from crowd.models import Study, StudyAccess, TaskKind
from markets.connections import connection_of
from quality.models import QualificationTest
from validation.selectors import BATCH_SIZE, study_catch_shortfall

from .study import what_is_left

BLOCK, WARN = "block", "warn"
# The researcher opened a paid study without verified ids on purpose: it serves, shown in red.
UNVERIFIED = "unverified"
# A line the researcher should know before launch, not a problem (the retention the sheet promises).
INFO = "info"
WRITING_KINDS = (TaskKind.WRITING, TaskKind.ADVERSARIAL)
LABELLING_KINDS = (TaskKind.VALIDATION, TaskKind.MPE_JUDGMENT)


@dataclass(frozen=True)
class Finding:
    level: str  # BLOCK, WARN or INFO
    what: str  # one sentence a researcher acts on


def _writing_pool(study: Study, wanted: Mapping[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    total, unassigned, room = wanted["premises"], wanted["unassigned"], wanted["units"]
    if total == 0:
        findings.append(
            Finding(
                BLOCK, f"The pool holds no available premise of “{study.dataset}”: import premises on the imports page."
            )
        )
    elif unassigned == total:
        findings.append(
            Finding(
                BLOCK,
                f"None of the pool's {total} premises has a split, and a writing study serves only premises with one: "
                "participants would read “no task”. Assign splits on the imports page.",
            )
        )
    elif unassigned:
        findings.append(
            Finding(WARN, f"{unassigned} of the pool's {total} premises have no split and are never served.")
        )
    if total and room == 0 and unassigned < total:
        findings.append(Finding(BLOCK, "Every premise of the pool is written on already: the study serves nothing."))
    elif study.planned_sessions and room < study.planned_sessions * study.tasks_per_batch:
        findings.append(
            Finding(
                WARN,
                f"The pool cannot fill the places: {study.planned_sessions} participants × {study.tasks_per_batch} "
                f"lines need {study.planned_sessions * study.tasks_per_batch} writings, and the pool has room for "
                f"{room}. Later participants would read “no task”.",
            )
        )
    return findings


def _labelling_pool(study: Study, catch_shortfall: str | None, wanted: Mapping[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    missing = wanted["units"]
    if missing == 0:
        findings.append(
            Finding(BLOCK, f"No pair of “{study.dataset}” waits for validation labels: the study serves nothing.")
        )
    elif study.planned_sessions and missing < study.planned_sessions * study.tasks_per_batch * BATCH_SIZE:
        needed = study.planned_sessions * study.tasks_per_batch * BATCH_SIZE
        findings.append(
            Finding(
                WARN,
                f"The pool cannot fill the places: {study.planned_sessions} participants × {study.tasks_per_batch} "
                f"batches of {BATCH_SIZE} need {needed} labels, and {missing} are wanted.",
            )
        )
    if catch_shortfall:
        findings.append(Finding(WARN, catch_shortfall))
    return findings


def _market(study: Study) -> list[Finding]:
    connection = connection_of(study)
    if connection is None:
        return [
            Finding(
                WARN,
                "No market is connected: sessions are approved and bonuses paid by hand or from the bonus files "
                "(connect it on the markets page).",
            )
        ]
    findings: list[Finding] = []
    if not (settings.MARKET_CREDENTIALS_KEY or "").strip():
        findings.append(
            Finding(
                BLOCK,
                "No market key: MARKET_CREDENTIALS_KEY is not set, so the server cannot read the market's "
                "credentials (nothing can be approved or paid through it).",
            )
        )
    if connection.last_checked_at is None:
        findings.append(Finding(WARN, "The market connection was never tested: test it on the markets page."))
    elif not connection.last_check_ok:
        findings.append(Finding(BLOCK, f"The market could not be reached when last tested: {connection.last_check}"))
    return findings


def _identity(study: Study) -> list[Finding]:
    """A paid study's ids: verified (its market confirms each participant, or signed links), else
    refused at its link (crowd.arrival.launch_refusal), or opened as unverified on purpose."""
    # A connection asks the market of every arrival (markets.identity.confirms_each_participant).
    refusal = launch_refusal(study, market_confirms=connection_of(study) is not None)
    if refusal is not None:
        return [Finding(BLOCK, refusal)]
    if study.open_link_unverified:
        paid = "It pays participants, but" if is_paid(study) else "Its"
        return [
            Finding(
                UNVERIFIED,
                f"Open link: {paid} participant ids are unverified (anyone may type one into its link), so no "
                "bonus is ever paid and each id is kept to the browser it first came from. Connect the market or "
                "require signed links to pay bonuses.",
            )
        ]
    return []


def _retention_line(study: Study) -> str:
    """Said for every study, so the information sheet can promise what the beat does (docs/privacy.md)."""
    return (
        f"Personal data (market and device ids, typing records) is pseudonymised {study.personal_data_retention_days} "
        "days after a visit ends once the study is inactive; contributions on withdrawal or erasure: "
        f"{study.get_contributions_on_withdrawal_display()}."
    )


def launch_check(
    study: Study,
    catch_shortfall: str | Literal[False] | None = False,
    *,
    sheet: InformationSheet | Literal[False] | None = False,
    wanted: Mapping[str, Any] | None = None,
) -> list[Finding]:
    """What would make `study` serve nothing or mislead, blocking findings first. `catch_shortfall`,
    `sheet` and `wanted` (`what_is_left`): the study page's own readings (False, None: read here)."""
    findings: list[Finding] = []
    if not study.is_active:
        findings.append(Finding(BLOCK, "The study is inactive: its link refuses every participant."))
    if study.access == StudyAccess.QUALIFIED and not QualificationTest.objects.filter(study=study).exists():
        findings.append(
            Finding(
                BLOCK,
                "Access is for workers who passed the qualification test, and the study has none: nobody could "
                "qualify. Add its test in the admin (Qualification tests), or open the study to all.",
            )
        )
    if study.task_kind in WRITING_KINDS:
        findings += _writing_pool(study, wanted if wanted is not None else what_is_left(study))
    elif study.task_kind in LABELLING_KINDS:
        if catch_shortfall is False:
            catch_shortfall = study_catch_shortfall(study)
        findings += _labelling_pool(study, catch_shortfall, wanted if wanted is not None else what_is_left(study))
    if not study.completion_url:
        findings.append(
            Finding(
                WARN, "No completion URL: finished participants are shown their code but not sent back to the market."
            )
        )
    if sheet is False:
        sheet = current_sheet(study)
    if sheet is None:
        findings.append(
            Finding(
                WARN,
                "No information sheet: participants are given tasks without reading what the study records or "
                "agreeing to it. Write the sheet and its consent statements in the study's settings.",
            )
        )
    elif left := placeholders_left(sheet.text):
        findings.append(
            Finding(
                WARN,
                f"The information sheet still holds {len(left)} of the template's places to fill in "
                f"(e.g. “{' '.join(left[0].split())}”): participants would read them as they are.",
            )
        )
    findings += _identity(study)
    findings += _market(study)
    findings.append(Finding(INFO, _retention_line(study)))
    return sorted(findings, key=lambda finding: (finding.level != BLOCK, finding.level == INFO))
