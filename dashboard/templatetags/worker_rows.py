"""The workers page's two tables, each row written in one step: as template nodes they were most
of the page's rendering. Every text from the data is escaped as the template escaped it
(`html.escape`, called directly: `format_html`'s laziness checks cost as much as the template).
"""

from collections.abc import Collection, Iterable, Mapping
from html import escape
from typing import Any

from django import template
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from quality.selectors import WorkerQuality

from .dashboard_tags import MISSING, decimal, pct, raw, thousands

register = template.Library()

LOW_SENSE_TITLE = "Hypotheses far from their premise (sense score; docs/quality.md, Sense score)"
TWO_WAY_TITLE = "entailed / not-entailed, on two-way datasets"


def _typing_cell(row: Mapping[str, Any], evidence_url: str) -> str:
    """How the writer's hypotheses were typed, and their sense: flagged of those with a record."""
    typing = row.get("typing")
    if not typing:
        return MISSING
    cell = f'<a href="{evidence_url}?worker__id__exact={row["id"]}">{typing["flagged"]} of {typing["written"]}</a>'
    if typing.get("no_evidence"):
        cell += f' <span class="muted small">({typing["no_evidence"]} without record)</span>'
    if typing.get("sense_scored"):
        low = f"{typing['low_sense']} of {typing['sense_scored']}"
        if typing.get("low_sense_writer"):
            low = f'<span class="flag bad">{low}</span>'
        cell += f'<br><span class="small" data-stat="low_sense" title="{LOW_SENSE_TITLE}">low sense {low}</span>'
    return cell


def _worker_row(row: Mapping[str, Any], urls: Mapping[str, str]) -> str:
    worker_id = row["id"]
    name = f'<a href="{urls["workers"]}{worker_id}/change/">{escape(row["worker"])}</a>'
    if row["worker"] != row["username"]:
        name += f' <span class="muted small">{escape(str(row["username"]))}</span>'
    checked = f"{checks['flagged']} of {checks['checked']}" if (checks := row.get("writing_checks")) else MISSING
    flags = ('<span class="flag ok">trusted</span>' if row["is_trusted"] else "") + (
        '<span class="flag bad">excluded</span>' if row["is_excluded"] else ""
    )
    author_gold, agreement, seconds = row["author_gold"], row["gold_agreement"], row["median_writing_seconds"]
    return (
        f'      <tr data-worker="{worker_id}">\n'
        f"        <td>{name}</td>\n"
        f"        <td>{escape(str(row['market']))}</td>\n"
        f'        <td class="num" data-stat="pairs_written" data-value="{row["pairs_written"]}">'
        f'<a href="{urls["pairs"]}?author__id__exact={worker_id}">{thousands(row["pairs_written"])}</a></td>\n'
        f'        <td class="num" data-stat="author_gold" data-value="{raw(author_gold)}">{pct(author_gold)}</td>\n'
        f'        <td class="num" data-stat="labels_given" data-value="{row["labels_given"]}">'
        f'<a href="{urls["labels"]}?worker__id__exact={worker_id}">{thousands(row["labels_given"])}</a></td>\n'
        f'        <td class="num" data-stat="gold_agreement" data-value="{raw(agreement)}">{pct(agreement)}</td>\n'
        f'        <td class="num" data-stat="median_writing_seconds" data-value="{raw(seconds)}">{decimal(seconds, 0)}</td>\n'
        f'        <td class="num" data-stat="typing_flagged">{_typing_cell(row, urls["evidence"])}</td>\n'
        f'        <td class="num" data-stat="writing_checks_flagged">{checked}</td>\n'
        f"        <td>{flags}</td>\n"
        "      </tr>"
    )


@register.simple_tag
def worker_table_rows(rows: Iterable[Mapping[str, Any]]) -> SafeString:
    urls = {
        "workers": reverse("admin:corpus_worker_changelist"),
        "pairs": reverse("admin:corpus_pair_changelist"),
        "labels": reverse("admin:corpus_validationlabel_changelist"),
        "evidence": reverse("admin:authorship_writingevidence_changelist"),
    }
    return mark_safe("\n".join(_worker_row(row, urls) for row in rows))


def _shares_cell(row: WorkerQuality) -> str:
    shares = row.label_shares
    if shares["entailment"] is None:
        cell = MISSING
    else:
        cell = f"{pct(shares['entailment'], 0)} / {pct(shares['neutral'], 0)} / {pct(shares['contradiction'], 0)}"
    cell += "\n            "  # as the template wrote it: tests and scripts read the cell's text
    two = row.two_way_shares
    if two:
        cell += (
            f'<br><span class="small" data-stat="two-way-shares" title="{TWO_WAY_TITLE}">'
            f'{pct(two["entailed"], 0)} / {pct(two["not_entailed"], 0)} <span class="muted">(two-way)</span></span>'
        )
    return cell


def _with_count(share: float | None, part: int, whole: int) -> str:
    return f'{pct(share, 0)} <span class="muted small">({part}/{whole})</span>' if whole else MISSING


def _quality_row(row: WorkerQuality, excluded: Collection[int]) -> str:
    pk, name = row.worker.pk, escape(str(row.worker))
    flagged = ' class="flagged"' if row.flags else ""
    marked = ' <span class="flag bad">excluded</span>' if pk in excluded else ""
    flags = "".join(
        f'<span class="flag bad" data-flag="{kind}" title="{reason}">{kind}</span> <span class="small muted">{reason}</span><br>'
        for kind, reason in ((escape(flag.kind), escape(flag.reason)) for flag in row.flags)
    )
    return (
        f'        <tr data-worker="{pk}"{flagged}>\n'
        f'          <td><input type="checkbox" name="worker" value="{pk}" aria-label="select {name}"></td>\n'
        f"          <td>{name}{marked}</td>\n"
        f'          <td class="num">{thousands(row.labels_given)}</td>\n'
        f'          <td class="num" data-stat="shares">{_shares_cell(row)}</td>\n'
        f'          <td class="num" data-stat="loo">{pct(row.loo_agreement)} '
        f'<span class="muted small">({row.loo_agreements}/{row.loo_items})</span></td>\n'
        f'          <td class="num" data-stat="catch">{_with_count(row.catch_accuracy, row.catch_matched, row.catch_seen)}</td>\n'
        f'          <td class="num">{decimal(row.median_seconds, 1)}</td>\n'
        f'          <td class="num">'
        f"{_with_count(row.written_gold_differs_share, row.written_gold_differs, row.pairs_written)}</td>\n"
        f"          <td>{flags}</td>\n"
        "        </tr>"
    )


@register.simple_tag
def quality_table_rows(rows: Iterable[WorkerQuality], excluded: Collection[int]) -> SafeString:
    """The `<tr>` of each worker-quality row, "excluded" marked for the workers in `excluded`."""
    return mark_safe("\n".join(_quality_row(row, excluded) for row in rows))


@register.simple_tag
def copy_writer_rows(rows: Iterable[Mapping[str, Any]]) -> SafeString:
    """The `<tr>` of each writer with most copies (`authorship.selectors.copies_by_writer`)."""
    return mark_safe(
        "".join(
            f'<tr data-worker="{row["worker_id"]}"><td>{escape(str(row["writer"]))}</td>'
            f'<td class="num">{thousands(row["written"])}</td>'
            f'<td class="num" data-stat="copies_of_others">{thousands(row["of_others"])}</td>'
            f'<td class="num" data-stat="own_repeats">{thousands(row["own_repeats"])}</td>'
            f'<td class="num">{thousands(row["sessions"])}</td></tr>'
            for row in rows
        )
    )


def _cluster_writers(writers: Iterable[Mapping[str, Any]]) -> str:
    return ", ".join(
        f'<span data-worker="{writer["worker_id"]}">{escape(str(writer["writer"]))}</span>'
        f' <span class="muted small">({writer["sentences"]}, {writer["sessions"]})</span>'
        for writer in writers
    )


@register.simple_tag
def copy_cluster_rows(clusters: Iterable[Mapping[str, Any]]) -> SafeString:
    """The `<tr>` of each largest group of copies (`authorship.selectors.copy_clusters`)."""
    return mark_safe(
        "".join(
            f'<tr data-cluster="{cluster["root"]}"><td>{escape(str(cluster["text"]))}</td>'
            f'<td class="num">{thousands(cluster["sentences"])}</td><td>{_cluster_writers(cluster["writers"])}</td></tr>'
            for cluster in clusters
        )
    )
