"""Every arrow between apps points down, and no module circle exists (docs/architecture.md).

Apps sit in layers: the base, the core, the crowd, the judgement floor, the feature apps, the
loops, the top, and above them all the composition root. An app may refer to its own app and to apps of lower layers only; apps of one
layer do not refer to each other. The test sees every kind of reference that ties one app to
another, not only imports:

- import: every import, the ones inside functions too;
- template: a template named in Python (`render(request, "collection/x.html")`) or by a
  template's `{% extends %}` / `{% include %}`; a template belongs to the app whose folder holds
  it (`templates/<app>/...`), a template outside an app's folder to the site's base;
- url: a URL name in `reverse()`, `redirect()`, `reverse_lazy()`, `resolve_url()` or a template's
  `{% url %}`, and any string in Python that is a project URL name; a name belongs to the app whose
  urls module declares it (the admin's `admin:<app>_<model>_...` names to the model's app, its
  other names to Django);
- model: a model named by its label, `get_model("app", "Model")`, `("app", "Model")` or
  `"app.Model"` (lazy foreign keys too);
- task: a Celery task named by its registered name (`enqueue("artifacts.tag_pairs")`); a task
  belongs to the app of the module that defines it.

A `{% url %}` whose name is a variable hides its target, so it is refused. So is a scan for models
(`apps.get_models()`, an app config's `get_models()`, a class's `__subclasses__()`): it reaches
whatever models the apps above define, by what they are rather than by name, so no arrow shows
it; the composition root names such models instead and registers them into the crowd layer
(`annotation_site.wiring.CLAIM_MODELS`, `crowd.registry`). A Django signal whose
answers the sender reads (`x = signal.send(...)`) is a call upward that no arrow shows, so it is
refused too; a signal whose answers nobody reads is an event: its receiver imports the signal from
the lower layer, and that import is the arrow the test sees (receivers are not listed as arrows
of their own: the sender knows nothing of them).

The base is an app of its own (`base/`): the utilities every app uses (the task queue's
`enqueue`, the API's error answers and query rules, parsers, progress, plain rows, long tasks,
permissions, middleware, ...). The composition root is the project package (`annotation_site/`:
settings, test settings, URLs, the Celery app, the wiring, the app config that calls the wiring,
the WSGI entry): it names every app by design (INSTALLED_APPS, the URLconf, the beat schedule, the
task apps it registers into the crowd layer and the snapshot export) and is the top layer: it is
checked like every module, and no module beneath it, the base's included, may refer to it.
Nothing is left out.
"""

import ast
import re
import shutil
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TEMPLATES = REPO / "templates"

SITE = "base"  # the base: the app every other app may import
ROOT = "annotation_site"  # the composition root, the project package
LAYERS = [
    ("base", {SITE}),
    ("teams", {"teams"}),
    ("audit", {"audit"}),
    ("core", {"corpus"}),
    ("crowd", {"crowd"}),
    ("consent", {"consent"}),
    ("judgement", {"quality", "artifacts", "authorship"}),
    ("features", {"collection", "validation", "importers", "modeling", "markets"}),
    ("loops", {"adversarial", "model_annotators"}),
    ("privacy", {"privacy"}),
    ("top", {"dashboard", "demo"}),
    ("root", {ROOT}),
]
LAYER_OF = {app: index for index, (_, apps) in enumerate(LAYERS) for app in apps}
URL_CALLS = {"reverse", "reverse_lazy", "redirect", "resolve_url"}
# Calls that find models or classes by scanning, naming none of them.
SCAN_CALLS = {"get_models", "__subclasses__"}


def project_modules():
    """{dotted module name: path} of every app module (tests, bench and migrations aside)."""
    modules = {}
    for package in sorted(LAYER_OF):
        for path in (REPO / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def module_tree(path):
    """The parsed module at `path`, parsed once for the session (the files do not change under the tests)."""
    return _module_tree(Path(path))


@cache
def _module_tree(path):
    return ast.parse(path.read_text(encoding="utf-8"))


_NODES: dict[int, tuple[ast.AST, list[ast.AST]]] = {}


def nodes_of(tree):
    """Every node of `tree`, as ast.walk gives them; walked once per tree (each check reads all nodes)."""
    if id(tree) not in _NODES:
        _NODES[id(tree)] = (tree, list(ast.walk(tree)))  # the tree kept with its nodes: its id stays its own
    return _NODES[id(tree)][1]


def imports_of(name, path, modules, tree=None):
    """The project modules that `name` imports (absolute and relative, at any depth in the file)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in nodes_of(tree or module_tree(path)):
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
    """The app (layer unit) of a module: its top-level package."""
    return module.split(".")[0]


# The names the other kinds of reference point at, read from the running project.


@cache
def url_owners():
    """{URL name as reversed ("ns:name" or "name"): app that declares it} for the project's URLs."""
    from django.urls import URLPattern, URLResolver, get_resolver

    owners: dict[str, str] = {}

    def walk(patterns, namespace, module):
        for entry in patterns:
            if isinstance(entry, URLResolver):
                inner = entry.urlconf_module
                inner_name = getattr(inner, "__name__", module) if not isinstance(inner, list) else module
                spaced = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
                walk(entry.url_patterns, spaced, inner_name)
            elif isinstance(entry, URLPattern) and entry.name and namespace != "admin:":
                # The admin's names are the models' apps' and Django's (url_owner), not the root's that mounts it.
                owners.setdefault(namespace + entry.name, app_of(module))

    walk(get_resolver().url_patterns, "", "annotation_site.urls")
    return {name: app for name, app in owners.items() if app in LAYER_OF}


def url_owner(name):
    if name in url_owners():
        return url_owners()[name]
    if name.startswith("admin:"):  # admin:<app>_<model>_<action>
        app = name[len("admin:") :].split("_")[0]
        return app if app in LAYER_OF else None
    return None


@cache
def model_owners():
    """{"app.Model" lower-cased: app} for the project's models."""
    from django.apps import apps

    return {
        model._meta.label_lower: model._meta.app_label
        for model in apps.get_models()
        if model._meta.app_label in LAYER_OF
    }


def model_owner(app_label, model_name):
    return model_owners().get(f"{app_label}.{model_name}".lower())


@cache
def task_owners():
    """{registered Celery task name: app of the module that defines the task}."""
    from annotation_site.celery import app

    app.loader.import_default_modules()
    return {name: app_of(task.__module__) for name, task in app.tasks.items() if app_of(task.__module__) in LAYER_OF}


def template_owner(name):
    first = name.split("/")[0]
    return first if "/" in name and first in LAYER_OF else SITE


def project_templates(folder=TEMPLATES):
    return {path.relative_to(folder).as_posix(): path for path in folder.rglob("*.html")}


# Reading references out of Python modules and templates.


def _strings(tree):
    """Every string constant in a module but its docstrings (bare string statements)."""
    bare = {id(node.value) for node in nodes_of(tree) if isinstance(node, ast.Expr)}
    return [
        node
        for node in nodes_of(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in bare
    ]


def _keys(tree):
    """String constants that are keys, not names: dict keys, subscripts, `name=` of a URL pattern."""
    keys = set()
    for node in nodes_of(tree):
        if isinstance(node, ast.Dict):
            keys |= {id(key) for key in node.keys if key is not None}
        elif isinstance(node, ast.Subscript):
            keys.add(id(node.slice))
        elif isinstance(node, ast.keyword) and node.arg == "name":
            keys.add(id(node.value))
    return keys


def _call_name(node):
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def python_references(tree, templates):
    """[(kind, what it names, app that owns it, or None when no app does)] read from a module."""
    found = []
    keys = _keys(tree)
    for node in _strings(tree):
        text = node.value
        if text in templates:
            found.append(("template", text, template_owner(text)))
        # A plain name ("faq") is also a word: as a key it names no URL. "ns:name" is always a URL name.
        if text in url_owners() and (":" in text or id(node) not in keys):
            found.append(("url", text, url_owners()[text]))
        if text in task_owners():
            found.append(("task", text, task_owners()[text]))
        if re.fullmatch(r"[a-z_]+\.[A-Za-z]+", text) and model_owner(*text.split(".")):
            found.append(("model", text, model_owner(*text.split("."))))
    for node in nodes_of(tree):
        pair = None
        if isinstance(node, ast.Call) and _call_name(node) == "get_model" and len(node.args) >= 2:
            pair = node.args[:2]
        elif isinstance(node, ast.Tuple) and len(node.elts) == 2:
            pair = node.elts
        names = [item.value for item in pair or [] if isinstance(item, ast.Constant) and isinstance(item.value, str)]
        if len(names) == 2:  # both items of the pair are strings
            owner = model_owner(*names)
            if owner:
                found.append(("model", f"{names[0]}.{names[1]}", owner))
        if isinstance(node, ast.Call) and _call_name(node) in SCAN_CALLS:
            found.append(("scan", f"{_call_name(node)}() at line {node.lineno}", "?"))
        if isinstance(node, ast.Call) and _call_name(node) in URL_CALLS and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str) and ":" in first.value:
                owner = url_owner(first.value)
                if owner and first.value not in url_owners():
                    found.append(("url", first.value, owner))
    return found


TAG = re.compile(r"{%\s*(url|include|extends)\s+(\S+)")


def template_references(text, templates):
    """[(kind, what it names, owner app or None)] of a template's {% url %}, {% include %} and {% extends %}."""
    found = []
    for tag, argument in TAG.findall(text):
        quoted = argument[1:-1] if argument[:1] in "'\"" and argument[-1:] == argument[:1] else None
        if tag == "url":
            if quoted is None:
                found.append(("url", argument, "?"))  # a variable: the test cannot see where it points
            else:
                found.append(("url", quoted, url_owner(quoted)))
        elif quoted is not None:
            found.append(("template", quoted, template_owner(quoted)))
        else:
            found.append(("template", argument, "?"))
    return found


def signal_answers_read(tree):
    """Lines where the answers of a signal's send() are read (assigned, iterated, returned, passed on)."""
    lines = []
    for node in nodes_of(tree):
        if isinstance(node, ast.Expr):
            continue
        for child in ast.iter_child_nodes(node):
            if (
                isinstance(child, ast.Call)
                and isinstance(child.func, ast.Attribute)
                and child.func.attr in ("send", "send_robust")
                and any(keyword.arg == "sender" for keyword in child.keywords)
            ):
                lines.append(child.lineno)
    return lines


def every_reference(template_folder=TEMPLATES):
    """[(kind, source, source app, target, target app)] of every reference between apps the test sees."""
    modules = project_modules()
    templates = project_templates(template_folder)
    found = []
    for name, path in modules.items():
        tree = module_tree(path)
        for target in imports_of(name, path, modules, tree):
            found.append(("import", name, app_of(name), target, app_of(target)))
        for kind, what, owner in python_references(tree, templates):
            found.append((kind, name, app_of(name), what, owner))
    for name, path in templates.items():
        for kind, what, owner in template_references(path.read_text(encoding="utf-8"), templates):
            found.append((kind, f"templates/{name}", template_owner(name), what, owner))
    return found


def wrong_arrows(references):
    wrong = []
    for kind, source, source_app, target, target_app in references:
        if target_app == "?":
            wrong.append(f"{kind}: {source} names {target}, which the test cannot follow")
        elif target_app and source_app != target_app and LAYER_OF[target_app] >= LAYER_OF[source_app]:
            wrong.append(f"{kind}: {source} -> {target} ({source_app} -> {target_app})")
    return sorted(set(wrong))


def app_arrows(references, kinds=None):
    """The distinct (kind, source app, target app) arrows between two apps."""
    return {
        (kind, source_app, target_app)
        for kind, _, source_app, _, target_app in references
        if target_app not in (None, "?") and source_app != target_app and (kinds is None or kind in kinds)
    }


def test_no_app_refers_to_a_higher_layer_or_a_peer():
    wrong = wrong_arrows(every_reference())
    assert not wrong, "references that point up or sideways:\n" + "\n".join(wrong)


def test_no_signal_answers_are_read():
    found = []
    for name, path in project_modules().items():
        found += [f"{name}:{line}" for line in signal_answers_read(module_tree(path))]
    assert not found, "a signal whose answers are read is a call upward; make it a plain call:\n" + "\n".join(found)


def strongly_connected(graph):
    """Tarjan's algorithm: the groups of modules that reach each other."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

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
    assert "corpus.models" in imports_of("corpus.services", modules["corpus.services"], modules)


def planted(source_app, references):
    return wrong_arrows([(kind, f"{source_app}.planted", source_app, what, owner) for kind, what, owner in references])


def test_the_checks_see_every_kind_of_planted_upward_reference():
    templates = project_templates()
    module = '''
"""A docstring naming "collection/writing_task.html" is prose, not a reference."""
from django.apps import apps
from django.shortcuts import redirect
from django.urls import reverse
from base.task_queue import enqueue

def view(request):
    apps.get_model("modeling", "TrainingRun")
    LABELS = ("quality", "AggregatedLabel")
    enqueue("artifacts.tag_pairs")
    reverse("dashboard:training_detail", args=[1])
    redirect("writing_next")
    return render(request, "collection/writing_task.html", {})
'''
    wrong = planted("crowd", python_references(ast.parse(module), templates))
    for expected in (
        "model: crowd.planted -> modeling.TrainingRun (crowd -> modeling)",
        "model: crowd.planted -> quality.AggregatedLabel (crowd -> quality)",
        "task: crowd.planted -> artifacts.tag_pairs (crowd -> artifacts)",
        "url: crowd.planted -> dashboard:training_detail (crowd -> dashboard)",
        "url: crowd.planted -> writing_next (crowd -> collection)",
        "template: crowd.planted -> collection/writing_task.html (crowd -> collection)",
    ):
        assert expected in wrong, wrong
    assert len([line for line in wrong if "writing_task.html" in line]) == 1  # the docstring is not counted
    # The same references pointing down are fine.
    assert planted("dashboard", python_references(ast.parse(module), templates)) == []

    template = (
        '{% extends "dashboard/base.html" %}{% include "adversarial/_x.html" %}'
        "{% url 'adversarial:next' %}{% url link.url_name %}{% url 'admin:dashboard_x_change' 1 %}"
    )
    wrong = planted("quality", template_references(template, templates))
    assert wrong == sorted(
        [
            "template: quality.planted -> dashboard/base.html (quality -> dashboard)",
            "template: quality.planted -> adversarial/_x.html (quality -> adversarial)",
            "url: quality.planted -> adversarial:next (quality -> adversarial)",
            "url: quality.planted names link.url_name, which the test cannot follow",
            "url: quality.planted -> admin:dashboard_x_change (quality -> dashboard)",
        ]
    ), wrong
    # A peer of the same layer is refused too.
    assert planted("validation", [("url", "writing_next", url_owner("writing_next"))]) == [
        "url: validation.planted -> writing_next (validation -> collection)"
    ]


def test_the_checks_see_a_planted_scan_for_models():
    """A scan of the app registry (or of a class's subclasses) reaches models of any app without
    naming one: the test cannot tell where it points, so it refuses it in every app."""
    module = """
from django.apps import apps
from crowd.models import TaskClaim

def claim_models():
    found = [model for model in apps.get_models() if issubclass(model, TaskClaim)]
    found += apps.get_app_config("collection").get_models()
    return found + TaskClaim.__subclasses__()
"""
    wrong = planted("crowd", python_references(ast.parse(module), project_templates()))
    assert wrong == [
        "scan: crowd.planted names __subclasses__() at line 8, which the test cannot follow",
        "scan: crowd.planted names get_models() at line 6, which the test cannot follow",
        "scan: crowd.planted names get_models() at line 7, which the test cannot follow",
    ], wrong
    # Even in the top layer, which may name every app below it: a scan is not a name.
    assert len(planted("dashboard", python_references(ast.parse(module), project_templates()))) == 3


def test_the_check_sees_a_signal_whose_answers_are_read():
    source = """
answers = wanted.send(sender=None, worker=1)
for _receiver, pks in wanted.send(sender=None):
    pass
done.send(sender=None, pair_ids=[1])
"""
    assert signal_answers_read(ast.parse(source)) == [2, 3]


def test_a_planted_upward_import_fails_the_check(tmp_path):
    planted_module = tmp_path / "planted.py"
    planted_module.write_text("def f():\n    from dashboard.queries import corpus\n", encoding="utf-8")
    targets = imports_of("corpus.planted", planted_module, project_modules())
    assert wrong_arrows([("import", "corpus.planted", "corpus", t, app_of(t)) for t in targets]) == [
        "import: corpus.planted -> dashboard.queries.corpus (corpus -> dashboard)"
    ]


def test_a_planted_upward_template_file_fails_the_whole_check(tmp_path):
    """The whole check, on a copy of the template folder with one planted template, sees its arrow
    (and nothing else: the real folder has none)."""
    folder = tmp_path / "templates"
    shutil.copytree(TEMPLATES, folder)
    (folder / "corpus").mkdir(exist_ok=True)
    (folder / "corpus" / "_planted.html").write_text(
        "{% extends \"crowd/completion.html\" %}{% url 'dashboard:collection' %}", encoding="utf-8"
    )
    assert wrong_arrows(every_reference(folder)) == [
        "template: templates/corpus/_planted.html -> crowd/completion.html (corpus -> crowd)",
        "url: templates/corpus/_planted.html -> dashboard:collection (corpus -> dashboard)",
    ]


def test_the_composition_root_is_checked_on_top():
    """The root's modules are read like every other (nothing is skipped) and rank above the top:
    they name every app, so their arrows all point down."""
    modules = project_modules()
    assert {f"{ROOT}.{name}" for name in ("apps", "settings", "urls", "wiring", "wsgi", "celery")} <= set(modules)
    assert LAYERS[-1] == ("root", {ROOT}) and LAYER_OF[ROOT] > LAYER_OF["dashboard"] > LAYER_OF[SITE]
    from_root = app_arrows([ref for ref in every_reference() if ref[2] == ROOT])
    assert ("import", ROOT, "crowd") in from_root and ("import", ROOT, SITE) in from_root, from_root
    # The site's utilities stay the base: an app imports them and the arrow points down.
    assert ("import", "crowd", SITE) in app_arrows(every_reference(), kinds={"import"})


def test_a_planted_import_of_the_root_fails_the_check(tmp_path):
    """Any module beneath the root that imports it, the base's own modules and the top's included, is refused."""
    planted_module = tmp_path / "planted.py"
    planted_module.write_text(
        "from annotation_site.wiring import NEXT_TASK_URL\nfrom annotation_site import settings\n", encoding="utf-8"
    )
    modules = project_modules()
    for source in ("crowd.planted", "dashboard.planted", "base.planted"):
        targets = imports_of(source, planted_module, modules)
        assert targets == {"annotation_site.wiring", "annotation_site.settings"}
        assert wrong_arrows([("import", source, app_of(source), t, app_of(t)) for t in targets]) == [
            f"import: {source} -> annotation_site.settings ({app_of(source)} -> {ROOT})",
            f"import: {source} -> annotation_site.wiring ({app_of(source)} -> {ROOT})",
        ]
    # The root itself may import every app beneath it.
    targets = imports_of("annotation_site.wiring", modules["annotation_site.wiring"], modules)
    assert wrong_arrows([("import", "annotation_site.wiring", ROOT, t, app_of(t)) for t in targets]) == []
