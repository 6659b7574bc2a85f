"""corpus/tallies/README.md says what is true: its table lists every registered tally
(`corpus.tallies.MAINTAINED`) with its tables, the module that keeps it, the modules that write
its deltas, the corpus signals its receivers follow (each receiver connected) and its repair
command. The writers are read from the code: a module that calls a function of the tally's
module that appends deltas, or that appends deltas through the engine itself, is in the table."""

import ast
import importlib
import re
from pathlib import Path

from django.core.management import get_commands
from django.dispatch import Signal

from corpus import signals, tallies
from tests.test_admin_layering import called_functions
from tests.test_layering import module_tree, project_modules

README = Path(tallies.__file__).with_name("README.md")
COLUMNS = ["Tally", "Tables", "Module", "Writers", "Signals its receivers follow", "Repair"]
APPENDS = {"insert_deltas", "insert_deltas_together"}


def table_rows(text):
    """{tally name: {column: [the `quoted` names in its cell]}} of the README's table."""
    lines = text.splitlines()
    header = f"| {' | '.join(COLUMNS)} |"
    assert header in lines, f"no table headed {header}"
    rows = {}
    for line in lines[lines.index(header) + 2 :]:
        if not line.startswith("|"):
            break
        cells = [re.findall(r"`([^`]+)`", cell) for cell in line.strip("|").split("|")]
        row = dict(zip(COLUMNS, cells, strict=True))
        rows[row["Tally"][0]] = row
    return rows


def _calls(function):
    return {
        node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        for node in ast.walk(function)
        if isinstance(node, ast.Call)
    }


def appending_functions(module, modules):
    """The top-level functions of `module` that append deltas, directly or through another of them."""
    functions = {node.name: node for node in module_tree(modules[module]).body if isinstance(node, ast.FunctionDef)}
    appending = {name for name, node in functions.items() if _calls(node) & APPENDS}
    while grown := {name for name, node in functions.items() if _calls(node) & appending} - appending:
        appending |= grown
    return appending


def defined_in(module, name):
    """The module that defines `module.name` (a package re-exports its modules' names)."""
    return getattr(getattr(importlib.import_module(module), name, None), "__module__", module), name


def writers_in_the_code():
    """({tally name: modules that call its module's appending functions}, modules that append
    deltas through the engine themselves), tests, benchmarks and the tally modules aside."""
    modules = project_modules()
    kept_in = {name: maintained.truth.__module__ for name, maintained in tallies.MAINTAINED.items()}
    engine = tallies.engine.__name__
    appending = {module: appending_functions(module, modules) for module in set(kept_in.values())}
    writers: dict[str, set[str]] = {name: set() for name in kept_in}
    direct = set()
    for source, path in modules.items():
        if source in appending or source == engine:
            continue
        for target in called_functions(source, path, modules):
            module, function = defined_in(*target)
            if module == engine and function in APPENDS:
                direct.add(source)
            for name, kept in kept_in.items():
                if module == kept and function in appending[kept]:
                    writers[name].add(source)
    return writers, direct


def signal_names():
    return {id(value): name for name, value in vars(signals).items() if isinstance(value, Signal)}


def test_the_readme_lists_every_registered_tally_with_its_tables_module_signals_and_repair():
    rows = table_rows(README.read_text(encoding="utf-8"))
    assert set(rows) == set(tallies.MAINTAINED)
    names = signal_names()
    for name, maintained in tallies.MAINTAINED.items():
        row = rows[name]
        assert row["Tables"] == [model.__name__ for model, _ in maintained.tables], name
        assert row["Module"] == [maintained.truth.__module__], name
        assert row["Signals its receivers follow"] == [names[id(signal)] for signal, _ in maintained.receivers], name
        assert row["Repair"] == [f"manage.py rebuild_tallies {name}"], name
    assert "rebuild_tallies" in get_commands()


def test_each_receiver_the_readme_names_is_connected_to_its_signal():
    for name, maintained in tallies.MAINTAINED.items():
        for signal, receiver in maintained.receivers:
            connected = {entry[0] for entry in signal.receivers}  # (lookup key, receiver, is async)
            assert any(key[0] == f"{name}-tally-{receiver.__name__}" for key in connected), (name, receiver)


def test_the_readme_names_every_writer_the_code_has():
    rows = table_rows(README.read_text(encoding="utf-8"))
    writers, direct = writers_in_the_code()
    for name, found in writers.items():
        assert found <= set(rows[name]["Writers"]), (name, sorted(found - set(rows[name]["Writers"])))
    listed = {module for row in rows.values() for module in row["Writers"]}
    assert direct <= listed, sorted(direct - listed)
    modules = project_modules()
    assert listed <= set(modules), sorted(listed - set(modules))


def test_the_writers_read_from_the_code_see_a_planted_writer(tmp_path):
    """The reading of writers finds a call of a tally's appending function through the package's
    name, as `from corpus import tallies` gives it."""
    planted = tmp_path / "planted.py"
    planted.write_text("from corpus import tallies\n\ndef f(moves):\n    tallies.words_moved(moves)\n")
    calls = {defined_in(*target) for target in called_functions("quality.planted", planted, project_modules())}
    assert ("corpus.tallies.corpus_tallies", "words_moved") in calls
    assert "words_moved" in appending_functions("corpus.tallies.corpus_tallies", project_modules())
