"""The recasting template language (nli-recast-template/1): compiling, checking and loading templates.

The format and its rules: docs/dnc.md ("Recasting templates"). importers.recasting runs a template
over source rows.
"""

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from base.json_errors import json_error_text
from importers import dnc

TEMPLATE_FORMAT = "nli-recast-template/1"
NAME_SLOT = "NAME"
ORDERS = ("as-listed", "entailed-first")
TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"

# DNC drew names from the US Social Security baby-name data (paper §3, footnote 11). These are
# common US given names from those public lists, one token each (DNC's hypotheses start with the
# name); they are drawn uniformly, not by frequency. A template may bring its own "names".
DEFAULT_NAMES = (
    "Aaliyah",
    "Aaron",
    "Abigail",
    "Adam",
    "Addison",
    "Adrian",
    "Aiden",
    "Alexa",
    "Alexander",
    "Alexis",
    "Allison",
    "Alyssa",
    "Amelia",
    "Andrew",
    "Angel",
    "Anna",
    "Anthony",
    "Aria",
    "Ariana",
    "Aubrey",
    "Audrey",
    "Austin",
    "Ava",
    "Avery",
    "Bella",
    "Benjamin",
    "Blake",
    "Brandon",
    "Brayden",
    "Brianna",
    "Brooklyn",
    "Caleb",
    "Cameron",
    "Camila",
    "Carter",
    "Charles",
    "Charlotte",
    "Chase",
    "Chloe",
    "Christian",
    "Christopher",
    "Claire",
    "Colton",
    "Connor",
    "Cooper",
    "Daniel",
    "David",
    "Dylan",
    "Eleanor",
    "Elijah",
    "Elizabeth",
    "Ella",
    "Ellie",
    "Emily",
    "Emma",
    "Ethan",
    "Evan",
    "Evelyn",
    "Gabriel",
    "Gabriella",
    "Gavin",
    "Genesis",
    "Grace",
    "Grayson",
    "Hailey",
    "Hannah",
    "Harper",
    "Henry",
    "Hudson",
    "Hunter",
    "Ian",
    "Isaac",
    "Isabella",
    "Isaiah",
    "Jack",
    "Jackson",
    "Jacob",
    "James",
    "Jasmine",
    "Jason",
    "Jayden",
    "Jeremiah",
    "Jesse",
    "John",
    "Jonathan",
    "Jordan",
    "Jose",
    "Joseph",
    "Joshua",
    "Josiah",
    "Julia",
    "Julian",
    "Kaylee",
    "Kayden",
    "Kennedy",
    "Kevin",
    "Khloe",
    "Landon",
    "Layla",
    "Leah",
    "Leo",
    "Levi",
    "Liam",
    "Lillian",
    "Lily",
    "Lincoln",
    "Logan",
    "Lucas",
    "Lucy",
    "Luke",
    "Madelyn",
    "Madison",
    "Mason",
    "Matthew",
    "Maya",
    "Mia",
    "Michael",
    "Mila",
    "Nathan",
    "Natalie",
    "Nevaeh",
    "Noah",
    "Nolan",
    "Nora",
    "Olivia",
    "Owen",
    "Paisley",
    "Parker",
    "Penelope",
    "Riley",
    "Robert",
    "Ryan",
    "Samantha",
    "Samuel",
    "Sarah",
    "Savannah",
    "Scarlett",
    "Sebastian",
    "Skylar",
    "Sofia",
    "Sophia",
    "Stella",
    "Thomas",
    "Tyler",
    "Victoria",
    "Violet",
    "William",
    "Wyatt",
    "Xavier",
    "Zoe",
    "Zoey",
)

_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}|[{}]")


class TemplateError(ValueError):
    """A template that cannot be used; the message names the file and the place in it."""


class RecastError(ValueError):
    """A source row that the template cannot recast; the message names the row."""


def as_text(value: object) -> str:
    """Field values as the text that patterns insert and rules compare."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# --- patterns --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pattern:
    parts: tuple[str | tuple[str, str], ...]  # literal text, or ("slot", name)

    @property
    def slots(self) -> set[str]:
        return {part[1] for part in self.parts if isinstance(part, tuple)}

    def render(self, values: Mapping[str, str]) -> str:
        return "".join(values[part[1]] if isinstance(part, tuple) else part for part in self.parts)


@dataclass(frozen=True)
class SwitchPattern:
    field: str
    cases: dict[str, Pattern]  # field text -> Pattern
    default: Pattern | None = None

    @property
    def slots(self) -> set[str]:
        patterns = [*self.cases.values(), *([self.default] if self.default else [])]
        none: set[str] = set()
        return none.union(*(pattern.slots for pattern in patterns))

    def render(self, values: Mapping[str, str]) -> str:
        key = values[self.field]
        pattern = self.cases.get(key, self.default)
        if pattern is None:
            raise RecastError(f"{self.field}={key!r} has no case in the template (cases: {', '.join(self.cases)})")
        return pattern.render(values)


def compile_text(text: str, where: str) -> Pattern:
    parts: list[str | tuple[str, str]] = []
    position = 0
    for match in _PLACEHOLDER.finditer(text):
        parts.append(text[position : match.start()])
        token = match.group(0)
        if match.group(1):
            parts.append(("slot", match.group(1)))
        elif token in ("{{", "}}"):
            parts.append(token[0])
        else:
            raise TemplateError(
                f"{where}: a lone {token!r} at column {match.start() + 1} of {text!r} "
                "(write {{ or }} for a literal brace)"
            )
        position = match.end()
    parts.append(text[position:])
    return Pattern(tuple(part for part in parts if part != ""))


def compile_pattern(spec: object, where: str) -> Pattern | SwitchPattern:
    if isinstance(spec, str):
        return compile_text(spec, where)
    if isinstance(spec, dict) and "switch" in spec:
        _only_keys(spec, {"switch", "cases", "default"}, where)
        cases = spec.get("cases")
        if not isinstance(spec["switch"], str) or not isinstance(cases, dict) or not cases:
            raise TemplateError(f"{where}: a switch needs a field name and a non-empty 'cases' object")
        default = spec.get("default")
        return SwitchPattern(
            field=spec["switch"],
            cases={
                as_text(key): compile_text(_string(value, f"{where}.cases.{key}"), f"{where}.cases.{key}")
                for key, value in cases.items()
            },
            default=None if default is None else compile_text(_string(default, f"{where}.default"), f"{where}.default"),
        )
    raise TemplateError(f'{where}: a pattern is a string or a {{"switch": ...}} object, not {spec!r}')


# --- rules -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Predicate:
    kind: str  # in (also what "equals" becomes), all, any, not
    field: str | None = None
    values: tuple[str, ...] = ()  # texts for equals/in
    parts: tuple["Predicate", ...] = ()  # sub-predicates for all/any/not

    @property
    def fields(self) -> set[str]:
        own = {self.field} if self.field else set()
        return own.union(*(part.fields for part in self.parts))

    def holds(self, values: Mapping[str, str]) -> bool:
        if self.kind in ("equals", "in"):
            assert self.field is not None  # compile_predicate gives these kinds a field
            return values[self.field] in self.values
        if self.kind == "all":
            return all(part.holds(values) for part in self.parts)
        if self.kind == "any":
            return any(part.holds(values) for part in self.parts)
        return not self.parts[0].holds(values)


def compile_predicate(spec: object, where: str) -> Predicate:
    if not isinstance(spec, dict):
        raise TemplateError(f"{where}: a condition is an object, not {spec!r}")
    if "field" in spec:
        _only_keys(spec, {"field", "equals", "in"}, where)
        if ("equals" in spec) == ("in" in spec):
            raise TemplateError(f"{where}: a field condition needs exactly one of 'equals' or 'in'")
        values = [spec["equals"]] if "equals" in spec else spec["in"]
        if not isinstance(values, list) or not values:
            raise TemplateError(f"{where}: 'in' needs a non-empty list")
        return Predicate("in", field=_string(spec["field"], f"{where}.field"), values=tuple(map(as_text, values)))
    for kind in ("all", "any"):
        if kind in spec:
            _only_keys(spec, {kind}, where)
            if not isinstance(spec[kind], list) or not spec[kind]:
                raise TemplateError(f"{where}.{kind}: a non-empty list of conditions was expected")
            return Predicate(
                kind,
                parts=tuple(
                    compile_predicate(part, f"{where}.{kind}[{index}]") for index, part in enumerate(spec[kind])
                ),
            )
    if "not" in spec:
        _only_keys(spec, {"not"}, where)
        return Predicate("not", parts=(compile_predicate(spec["not"], f"{where}.not"),))
    raise TemplateError(f"{where}: a condition has 'field', 'all', 'any' or 'not'; found {sorted(spec)}")


@dataclass(frozen=True)
class IfRule:
    condition: Predicate
    then: object
    otherwise: object

    @property
    def labels(self) -> list[object]:
        return [self.then, self.otherwise]

    @property
    def fields(self) -> set[str]:
        return self.condition.fields

    def label(self, values: Mapping[str, str]) -> object:
        return self.then if self.condition.holds(values) else self.otherwise


@dataclass(frozen=True)
class MapRule:
    field: str
    mapping: dict[str, object]  # field text -> label

    @property
    def labels(self) -> list[object]:
        return list(self.mapping.values())

    @property
    def fields(self) -> set[str]:
        return {self.field}

    def label(self, values: Mapping[str, str]) -> object:
        key = values[self.field]
        if key not in self.mapping:
            raise RecastError(f"{self.field}={key!r} has no label in the template's map")
        return self.mapping[key]


def compile_rule(spec: object, where: str) -> IfRule | MapRule:
    if isinstance(spec, dict) and "if" in spec:
        _only_keys(spec, {"if", "then", "else"}, where)
        if "then" not in spec or "else" not in spec:
            raise TemplateError(f"{where}: an 'if' rule needs 'then' and 'else' labels")
        return IfRule(compile_predicate(spec["if"], f"{where}.if"), spec["then"], spec["else"])
    if isinstance(spec, dict) and "map" in spec:
        _only_keys(spec, {"field", "map"}, where)
        if not isinstance(spec["map"], dict) or not spec["map"]:
            raise TemplateError(f"{where}.map: a non-empty object was expected")
        return MapRule(
            _string(spec.get("field"), f"{where}.field"), {as_text(key): label for key, label in spec["map"].items()}
        )
    found = sorted(spec) if isinstance(spec, dict) else repr(spec)
    raise TemplateError(f"{where}: a label rule is {{'if', 'then', 'else'}} or {{'field', 'map'}}; found {found}")


# --- templates -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hypothesis:
    pattern: Pattern | SwitchPattern
    rule: IfRule | MapRule


@dataclass(frozen=True)
class RecastTemplate:
    name: str
    description: str
    fields: tuple[str, ...]
    type_of_inference: str
    label_set: tuple[object, ...] | None  # None when the pairs carry label-set null
    order: str
    names: tuple[str, ...]
    context: Pattern | SwitchPattern
    hypotheses: tuple[Hypothesis, ...]
    provenance: tuple[tuple[str, object], ...]  # (key, Pattern | SwitchPattern | literal JSON value)
    source: str = "<dict>"


_TOP_KEYS = {
    "format",
    "name",
    "description",
    "fields",
    "type_of_inference",
    "label_set",
    "order",
    "names",
    "context",
    "hypotheses",
    "provenance",
}
_REQUIRED_TOP_KEYS = ("format", "name", "fields", "type_of_inference", "context", "hypotheses", "provenance")
_REQUIRED_PROVENANCE = ("corpus", "corpus-sent-id", "creation-approach")


def _only_keys(spec: Iterable[str], allowed: Iterable[str], where: str) -> None:
    unknown = sorted(set(spec) - set(allowed))
    if unknown:
        raise TemplateError(
            f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; expected {', '.join(map(repr, sorted(allowed)))}"
        )


def _string(value: object, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise TemplateError(f"{where}: a non-empty string was expected, not {value!r}")
    return value


def _fields_of(pattern: Pattern | SwitchPattern) -> set[str]:
    """The fields a pattern reads: its placeholders, and a switch's own field."""
    return pattern.slots | ({pattern.field} if isinstance(pattern, SwitchPattern) else set())


def _check_fields_used(where: str, used: Iterable[str], declared: Sequence[str]) -> None:
    unknown = sorted(set(used) - set(declared) - {NAME_SLOT})
    if unknown:
        raise TemplateError(
            f"{where}: {', '.join('{' + name + '}' for name in unknown)} is not a declared field "
            f"(fields: {', '.join(declared)}; {{{NAME_SLOT}}} is a random name)"
        )


def _check_label(where: str, label: object, label_set: Sequence[object] | None) -> None:
    try:
        dnc.label_scheme(label)
    except ValueError:
        raise TemplateError(
            f"{where}: {label!r} is not a DNC label "
            "(entailed / not-entailed, 1-5, or entailment / neutral / contradiction)"
        ) from None
    if label_set is not None and label not in label_set:
        raise TemplateError(f"{where}: label {label!r} is not in label_set {list(label_set)}")


def _compile_hypothesis(
    spec: object, where: str, fields: Sequence[str], label_set: Sequence[object] | None
) -> Hypothesis:
    if not isinstance(spec, dict):
        raise TemplateError(f"{where}: an object with 'pattern' and 'label' was expected")
    _only_keys(spec, {"pattern", "label"}, where)
    if "pattern" not in spec or "label" not in spec:
        raise TemplateError(f"{where}: a hypothesis needs 'pattern' and 'label'")
    pattern = compile_pattern(spec["pattern"], f"{where}.pattern")
    rule = compile_rule(spec["label"], f"{where}.label")
    _check_fields_used(f"{where}.pattern", _fields_of(pattern), fields)
    _check_fields_used(f"{where}.label", rule.fields, fields)
    for label in rule.labels:
        _check_label(f"{where}.label", label, label_set)
    return Hypothesis(pattern, rule)


def _compile_provenance(spec: object, where: str, fields: Sequence[str]) -> tuple[tuple[str, object], ...]:
    if not isinstance(spec, dict):
        raise TemplateError(f"{where}: an object was expected")
    missing = [key for key in _REQUIRED_PROVENANCE if key not in spec]
    if missing:
        raise TemplateError(f"{where}: lacks {', '.join(missing)}")
    if "pair-id" in spec:
        raise TemplateError(f"{where}: pair-id is given by the recast, not the template")
    compiled: list[tuple[str, object]] = []
    for key, value in spec.items():
        if isinstance(value, str) or (isinstance(value, dict) and "switch" in value):
            value = compile_pattern(value, f"{where}.{key}")
            used = _fields_of(value)
            if NAME_SLOT in used:
                raise TemplateError(f"{where}.{key}: provenance cannot use the random {{{NAME_SLOT}}}")
            _check_fields_used(f"{where}.{key}", used, fields)
        compiled.append((key, value))
    return tuple(compiled)


def parse_template(spec: object, source: str = "<dict>") -> RecastTemplate:
    """A RecastTemplate from the template's JSON object; TemplateError says what is wrong and where."""
    where = source
    if not isinstance(spec, dict):
        raise TemplateError(f"{where}: a template is a JSON object")
    _only_keys(spec, _TOP_KEYS, where)
    missing = [key for key in _REQUIRED_TOP_KEYS if key not in spec]
    if missing:
        raise TemplateError(f"{where}: lacks {', '.join(missing)}")
    if spec["format"] != TEMPLATE_FORMAT:
        raise TemplateError(f"{where}: format {spec['format']!r} is not {TEMPLATE_FORMAT!r}")
    fields = spec["fields"]
    if not isinstance(fields, list) or not fields or not all(isinstance(name, str) and name for name in fields):
        raise TemplateError(f"{where}.fields: a non-empty list of field names was expected")
    if NAME_SLOT in fields:
        raise TemplateError(f"{where}.fields: {NAME_SLOT} is reserved for the random name")
    label_set = spec.get("label_set", list(dnc.TWO_WAY_LABELS))
    if label_set is not None and (not isinstance(label_set, list) or not label_set):
        raise TemplateError(f"{where}.label_set: a non-empty list (or null) was expected")
    order = spec.get("order", "as-listed")
    if order not in ORDERS:
        raise TemplateError(f"{where}.order: {order!r} is not one of {', '.join(ORDERS)}")
    names = spec.get("names", DEFAULT_NAMES)
    if (
        not isinstance(names, list | tuple)
        or not names
        or not all(isinstance(name, str) and name.strip() == name and name for name in names)
    ):
        raise TemplateError(f"{where}.names: a non-empty list of names without surrounding spaces was expected")
    context = compile_pattern(spec["context"], f"{where}.context")
    _check_fields_used(f"{where}.context", _fields_of(context), fields)
    hypotheses = spec["hypotheses"]
    if not isinstance(hypotheses, list) or not hypotheses:
        raise TemplateError(f"{where}.hypotheses: a non-empty list was expected")
    return RecastTemplate(
        name=_string(spec["name"], f"{where}.name"),
        description=spec.get("description", ""),
        fields=tuple(fields),
        type_of_inference=_string(spec["type_of_inference"], f"{where}.type_of_inference"),
        label_set=tuple(label_set) if label_set is not None else None,
        order=order,
        names=tuple(names),
        context=context,
        hypotheses=tuple(
            _compile_hypothesis(hypothesis, f"{where}.hypotheses[{index}]", fields, label_set)
            for index, hypothesis in enumerate(hypotheses)
        ),
        provenance=_compile_provenance(spec["provenance"], f"{where}.provenance", fields),
        source=source,
    )


def load_template(path: str | Path) -> RecastTemplate:
    """A RecastTemplate from a JSON file (a bare name is looked up among the shipped templates)."""
    path = Path(path)
    if not path.exists() and not path.suffix and (TEMPLATES_DIR / f"{path}.json").exists():
        path = TEMPLATES_DIR / f"{path}.json"
    try:
        spec = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TemplateError(f"{path}: no such template file") from None
    except json.JSONDecodeError as error:
        raise TemplateError(f"{path}: not valid JSON ({json_error_text(error)})") from None
    return parse_template(spec, source=str(path))


def shipped_templates() -> dict[str, Path]:
    """The templates that come with the platform, by file stem."""
    return {path.stem: path for path in sorted(TEMPLATES_DIR.glob("*.json"))}
