"""Recasting rows of another resource into NLI pairs with templates, the way DNC did; pure Python.

The template format (nli-recast-template/1) and its rules: docs/dnc.md ("Recasting templates");
importers.recast_templates compiles templates, importers.recast_rows reads source files.
"""

import random
from collections.abc import Callable, Iterable, Iterator, Mapping

from importers import dnc
from importers.recast_templates import NAME_SLOT, Pattern, RecastError, RecastTemplate, SwitchPattern, as_text

# --- recasting -------------------------------------------------------------------------------


# A source row: field name -> value (a mapping; _row_values refuses anything else).
Row = Mapping[str, object]


def _row_values(template: RecastTemplate, index: int, row: Row) -> dict[str, str]:
    if not hasattr(row, "keys"):
        raise RecastError(f"row {index}: a mapping of field names to values was expected, not {type(row).__name__}")
    missing = [name for name in template.fields if name not in row]
    if missing:
        raise RecastError(f"row {index}: lacks field(s) {', '.join(map(repr, missing))}")
    return {name: as_text(row[name]) for name in template.fields}


def _render(value: object, values: Mapping[str, str]) -> object:
    return value.render(values) if isinstance(value, Pattern | SwitchPattern) else value


def _provenance(template: RecastTemplate, values: Mapping[str, str]) -> dnc.Provenance:
    record = {key: _render(value, values) for key, value in template.provenance}
    # As DNC's metadata record: its fields sorted, the pair-id among them (the pair gives its value).
    return dnc.provenance_from_record(
        dict(sorted({**record, "pair-id": None}.items())), f"{template.source}.provenance"
    )


def _row_pairs(
    template: RecastTemplate, index: int, row: Row, draw_name: Callable[[], str]
) -> tuple[dict[str, str], list[tuple[str, str, object]]]:
    """The (context, hypothesis, label) of one source row, in the template's order.

    Names are drawn in output order, so that a release's names, given in its file order, land
    on the same pairs again.
    """
    values = _row_values(template, index, row)
    try:
        labelled = [(hypothesis, hypothesis.rule.label(values)) for hypothesis in template.hypotheses]
        if template.order == "entailed-first":
            labelled.sort(key=lambda item: not dnc.is_entailed(item[1]))  # stable: listed order within a side
        pairs: list[tuple[str, str, object]] = []
        for hypothesis, label in labelled:
            with_name = dict(values, **{NAME_SLOT: draw_name()})
            pairs.append((template.context.render(with_name), hypothesis.pattern.render(with_name), label))
    except RecastError as error:
        raise RecastError(f"row {index}: {error}") from None
    return values, pairs


def _name_drawer(template: RecastTemplate, seed: int, names: Iterable[str] | None) -> Callable[[], str]:
    if names is not None:
        supply = iter(names)

        def next_given() -> str:
            try:
                return next(supply)
            except StopIteration:
                raise RecastError("the names given ran out before the rows did") from None

        return next_given
    chooser = random.Random(seed)  # our own generator: the global random state is left alone
    return lambda: chooser.choice(template.names)


def recast(
    template: RecastTemplate,
    rows: Iterable[Row],
    *,
    split: str,
    seed: int = 0,
    first_pair_id: int = 1,
    names: Iterable[str] | None = None,
) -> Iterator[dnc.DncPair]:
    """Lazily turn source rows (mappings) into DncPairs with provenance.

    Pair ids count up from first_pair_id. Names for {NAME} are drawn with the seed, or taken in turn
    from `names` when given (to rebuild a release whose names are known).
    """
    draw_name = _name_drawer(template, seed, names)
    pair_id = first_pair_id
    label_set = list(template.label_set) if template.label_set is not None else None
    for index, row in enumerate(rows):
        values, pairs = _row_pairs(template, index, row, draw_name)
        for context, hypothesis, label in pairs:
            yield dnc.DncPair(
                pair_id=pair_id,
                context=context,
                hypothesis=hypothesis,
                label=label,
                label_set=list(label_set) if label_set is not None else None,
                binary_label=dnc.is_entailed(label),
                split=split,
                type_of_inference=template.type_of_inference,
                provenance=_provenance(template, values),
            )
            pair_id += 1
