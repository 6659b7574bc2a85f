"""The import graph has no upward arrow and no circle (docs/architecture.md).

Apps sit in layers: the base, the core, the crowd, the feature apps, the top. A module may
import its own app and apps of lower layers only; feature apps of one layer do not import each
other. Every import counts, the ones inside functions too, so none can hide an arrow.
"""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

LAYERS = [
    ("base", {"annotation_site"}),
    ("core", {"corpus"}),
    ("crowd", {"crowd"}),
    ("features", {"collection", "validation", "importers", "modeling", "artifacts", "quality"}),
    ("loops", {"adversarial"}),
    ("top", {"dashboard", "demo"}),
]
LAYER_OF = {app: index for index, (_, apps) in enumerate(LAYERS) for app in apps}


def project_modules():
    """{dotted module name: path} of every app module (tests, bench and migrations aside)."""
    modules = {}
    for app in LAYER_OF:
        for path in (REPO / app).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def imports_of(name, path, modules):
    """The project modules that `name` imports (absolute and relative, at any depth in the file)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # `from a import b` imports the module a.b when there is one, else names from a.
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph():
    modules = project_modules()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def app_of(module):
    return module.split(".")[0]


def test_no_app_imports_a_higher_layer_or_a_peer():
    wrong = []
    for module, targets in import_graph().items():
        for target in targets:
            source_app, target_app = app_of(module), app_of(target)
            if source_app != target_app and LAYER_OF[target_app] >= LAYER_OF[source_app]:
                wrong.append(f"{module} -> {target}")
    assert not wrong, "imports that point up or sideways:\n" + "\n".join(sorted(wrong))


def strongly_connected(graph):
    """Tarjan's algorithm: the groups of modules that reach each other."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            groups.append(group)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def test_no_circle_between_modules():
    circles = [sorted(group) for group in strongly_connected(import_graph()) if len(group) > 1]
    assert not circles, f"modules that import each other: {circles}"


def test_the_checks_see_a_planted_upward_arrow_and_circle():
    graph = {"corpus.models": {"dashboard.views"}, "dashboard.views": {"corpus.models"}}
    assert [sorted(group) for group in strongly_connected(graph) if len(group) > 1] == [
        ["corpus.models", "dashboard.views"]
    ]
    assert LAYER_OF[app_of("dashboard.views")] > LAYER_OF[app_of("corpus.models")]
    modules = project_modules()
    assert "corpus.models" in modules and "dashboard.queries.corpus" in modules
    assert "corpus.models" in imports_of("corpus.counters", modules["corpus.counters"], modules)
