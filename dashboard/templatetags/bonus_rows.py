"""The bonus page's long lists (hundreds of rows), each row written in one step: as template nodes
they were most of the page's rendering. Every text from the data is escaped as the template escaped
it (`html.escape`, called directly: `format_html`'s laziness checks cost as much as the template).
"""

from collections.abc import Iterable, Mapping
from decimal import ROUND_HALF_UP, Decimal
from html import escape
from typing import Any

from django import template
from django.utils.safestring import SafeString, mark_safe
from django.utils.timezone import localtime

from crowd.models import Study
from quality.bonus_lines import UnpaidLine
from quality.bonuses import CAUSE_BY_KEY

from .dashboard_tags import MISSING

register = template.Library()

CENT = Decimal("0.01")


def _cents(amount: Decimal) -> str:
    """An amount as `floatformat:2` writes it without localizing (the page's amounts are never negative)."""
    return str(Decimal(amount).quantize(CENT, ROUND_HALF_UP))


def _study_row(study: Study, chosen: Study | None) -> str:
    """A study's bonus totals (`quality.bonuses.study_summaries`' annotations), linked to its lists."""
    slug, currency = escape(study.slug), escape(study.bonus_currency)
    totals: Any = study  # the annotated figures
    return (
        f'\n      <tr data-study="{slug}"><td><a href="?study={slug}">{escape(study.name)}</a>'
        f"{' ◀' if study == chosen else ''}</td>\n"
        f'        <td class="num">{totals.unpaid_count}</td><td class="num">{_cents(totals.unpaid_amount)} {currency}</td>\n'
        f'        <td class="num" data-stat="held" data-value="{totals.held_count}">{totals.held_count}: '
        f"{_cents(totals.held_amount)} {currency}</td>\n"
        f'        <td class="num">{_cents(totals.earned_amount)} {currency}</td>'
        f'<td class="num">{_cents(totals.paid_amount)} {currency}</td></tr>\n    '
    )


@register.simple_tag
def bonus_study_rows(studies: Iterable[Study], chosen: Study | None) -> SafeString:
    """The `<tr>` of each study with bonuses: unpaid, held, earned and paid, the chosen one marked."""
    return mark_safe("".join(_study_row(study, chosen) for study in studies))


@register.simple_tag
def bonus_recipient_options(recipients: Iterable[Mapping[str, Any]]) -> SafeString:
    """An `<option>` of each session a discretionary bonus may go to (`bonus_recipients`' rows)."""
    return mark_safe(
        "".join(f'<option value="{visit["pk"]}">{escape(visit["label"])}</option>' for visit in recipients)
    )


def _marks(marks: Iterable[str]) -> str:
    return "".join(f' <span class="flag bad" data-mark="{mark}">{mark}</span>' for mark in map(escape, marks))


@register.simple_tag
def unpaid_bonus_rows(entries: Iterable[UnpaidLine]) -> SafeString:
    return mark_safe(
        "".join(
            f'\n        <tr data-bonus="{entry.pk}"><td>{escape(str(entry.worker))}{_marks(entry.marks)}</td>'
            f"<td>{escape(entry.worker.market)}</td>\n"
            f"          <td>{escape(entry.study_session.external_session_id or MISSING)}</td>"
            f'<td data-cause="{escape(entry.cause)}">{escape(CAUSE_BY_KEY[entry.cause].one)}</td>'
            f"<td>{escape(entry.pair.pair_id)}</td>\n"
            f'          <td class="num">{entry.amount} {escape(entry.currency)}</td>'
            f"<td>{localtime(entry.created_at):%Y-%m-%d %H:%M} UTC</td></tr>\n      "
            for entry in entries
        )
    )


def _accuracy(row: Mapping[str, Any]) -> str:
    # As the template's {% widthratio matched seen 100 %}: the share rounded to a whole percent.
    if row["catch_accuracy"] is None:
        return MISSING
    return f"{round(float(row['catch_matched']) / float(row['catch_seen']) * 100)}%"


def _catch_only(row: Mapping[str, Any]) -> str:
    flag = row["catch_only"]
    if not flag:
        return ""
    return (
        f' <span class="flag bad" data-flag="catch_only" title="{escape(flag.reason)}">'
        "catch right, ordinary labels at chance</span>"
    )


def _worker_row(row: Mapping[str, Any]) -> str:
    flagged = ' class="flagged"' if row["catch_only"] else ""
    return (
        f'\n      <tr data-worker="{row["id"]}"{flagged}>'
        f"<td>{escape(row['name'])}{_catch_only(row)}{_marks(row['marks'])}</td>"
        f'<td class="num">{row["catch_seen"]}</td><td class="num">{row["catch_matched"]}</td>\n'
        f'        <td class="num">{_accuracy(row)}</td>\n'
        f'        <td class="num">{row["earned"]}</td><td class="num">{row["paid"]}</td>'
        f'<td class="num" data-stat="held">{row["held"]}</td><td class="num" data-stat="unpaid">{row["unpaid"]}</td></tr>\n    '
    )


@register.simple_tag
def bonus_worker_rows(rows: Iterable[Mapping[str, Any]]) -> SafeString:
    """The `<tr>` of each worker of the page (`quality.bonuses.worker_totals`' rows with their `marks`)."""
    return mark_safe("".join(_worker_row(row) for row in rows))
