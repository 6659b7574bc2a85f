"""The docs describe the code as it is: paths they name exist, the layer diagram names every app,
and long explanations live in docs/, not in module docstrings."""

import ast
import re
from pathlib import Path

from tests.present import present

REPO = Path(__file__).resolve().parent.parent
DOCS = [*sorted((REPO / "docs").glob("*.md")), REPO / "README.md"]
APPS = sorted(path.parent.name for path in REPO.glob("*/apps.py"))
# Made at run time or installed, never committed: a doc may name what appears there.
RUNTIME = {".venv", "var", "media", "snapshots", "checkpoints", ".git", "__pycache__"}
TOP_LEVEL = {path.name for path in REPO.iterdir()} - RUNTIME
LONGEST_MODULE_DOCSTRING = 39

# A path: words joined by "/", e.g. corpus/gold.py, docs/mpe.md, importers/templates/*.json.
PATH = re.compile(r"(?<![\w./<-])((?:\.ci|[A-Za-z_][\w.-]*)/[\w.*/-]*[\w*])")
# A dotted reference in backticks: corpus.services.add_labels, quality.aggregate_labels (a task name).
DOTTED = re.compile(r"`([a-z_]+(?:\.[A-Za-z_]\w*)+)`")


def project_python_files():
    for path in REPO.rglob("*.py"):
        if not RUNTIME & set(path.relative_to(REPO).parts):
            yield path


def named_paths(text):
    """The repository paths a doc names (those starting at a top-level entry of the checkout)."""
    for match in PATH.finditer(text):
        path = match.group(1).rstrip(".")
        if path.split("/")[0] in TOP_LEVEL:
            yield path


def path_exists(path):
    """A file or folder of the checkout; a glob that matches something; or a template name
    (`crowd/completion.html` lives in templates/ or in an app's templates/)."""
    if "*" in path:
        return any(REPO.glob(path))
    candidates = [REPO / path, REPO / "templates" / path]
    candidates += [REPO / app / "templates" / path for app in APPS]
    return any(candidate.exists() for candidate in candidates)


def test_every_repository_path_in_the_docs_exists():
    missing = [
        f"{doc.relative_to(REPO)}: {path}"
        for doc in DOCS
        for path in sorted(set(named_paths(doc.read_text(encoding="utf-8"))))
        if not path_exists(path)
    ]
    assert not missing, "the docs name files that do not exist:\n" + "\n".join(missing)


def test_every_dotted_module_reference_in_the_docs_resolves():
    """`app.module...` names a module of the app (then anything in it), or is a name the code
    spells out as a string (a Celery task name such as `quality.aggregate_labels`)."""
    sources = "\n".join(path.read_text(encoding="utf-8") for path in project_python_files())
    unknown = []
    for doc in DOCS:
        for reference in sorted(set(DOTTED.findall(doc.read_text(encoding="utf-8")))):
            app, name, *_ = reference.split(".")
            if app not in APPS or not name[0].islower():
                continue  # not an app, or app.Model (a model's label)
            module = REPO / app / name
            if module.is_dir() or module.with_suffix(".py").exists() or f'"{reference}"' in sources:
                continue
            unknown.append(f"{doc.relative_to(REPO)}: {reference}")
    assert not unknown, "the docs name modules that do not exist:\n" + "\n".join(unknown)


def layer_diagram():
    """The code block under "Layers" in docs/architecture.md."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Layers", 1)[1]
    return section.split("```", 2)[1]


def test_the_layer_diagram_names_every_app():
    diagram = layer_diagram()
    missing = [app for app in APPS if not re.search(rf"(?<![\w/]){app}/", diagram)]
    assert not missing, f"apps missing from the layer diagram in docs/architecture.md: {', '.join(missing)}"


def diagram_layers(diagram):
    """{layer name: the apps the diagram puts in it}, read from the diagram's first two columns."""
    layers: dict[str, set[str]] = {}
    current = None
    for line in diagram.splitlines():
        match = re.match(r"^(\w+)?\s+(\w+)/\s", line + " ")
        if not match:
            continue
        if match.group(1):
            current = match.group(1)
        if current is not None and (match.group(1) or line[:11].strip() == ""):
            layers.setdefault(current, set()).add(match.group(2))
    return layers


def test_the_layer_diagram_is_the_layering_tests_picture():
    """The picture in docs/architecture.md puts each app in the layer tests/test_layering.py checks it in."""
    from tests.test_layering import LAYERS

    assert diagram_layers(layer_diagram()) == {name: set(apps) for name, apps in LAYERS}


def test_the_checks_find_what_they_look_for():
    """The helpers above can fail: a missing path, an app left out, a long docstring."""
    assert list(named_paths("the rule (`validation/gold.py`) and `corpus/gold.py`.")) == [
        "validation/gold.py",
        "corpus/gold.py",
    ]
    assert not path_exists("validation/gold.py") and path_exists("corpus/gold.py")
    assert path_exists("crowd/completion.html") and path_exists("importers/templates/*.json")
    assert "corpus/" in layer_diagram() and "quality" in APPS
    assert docstring_lines('"""one\n' + "line\n" * 40 + '"""\n') == 42


def docstring_lines(source):
    tree = ast.parse(source)
    first = tree.body[0] if tree.body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return present(first.end_lineno) - first.lineno + 1
    return 0


def test_no_module_docstring_is_40_lines_or_more():
    """Long explanations belong in docs/ (a module keeps its summary and a pointer there)."""
    long = [
        f"{path.relative_to(REPO)}: {lines} lines"
        for path in sorted(project_python_files())
        if (lines := docstring_lines(path.read_text(encoding="utf-8"))) > LONGEST_MODULE_DOCSTRING
    ]
    assert not long, "module docstrings of 40 lines or more (move them to docs/):\n" + "\n".join(long)


def ownership_table_apps():
    """The apps named in the first column of the table under "What each app owns" in docs/architecture.md."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## What each app owns", 1)[1].split("\n## ", 1)[0]
    return {match.group(1) for match in re.finditer(r"^\| (\w+) \|", section, re.MULTILINE)} - {"app"}


def project_apps():
    """This project's apps in INSTALLED_APPS (Django's and third parties' left out), by package name."""
    from django.conf import settings

    packages = (entry.split(".")[0] for entry in settings.INSTALLED_APPS)
    return {package for package in packages if (REPO / package / "apps.py").exists()}


def test_the_ownership_table_lists_every_installed_app():
    missing = sorted(project_apps() - ownership_table_apps())
    assert not missing, f"apps missing from 'What each app owns' in docs/architecture.md: {', '.join(missing)}"
    assert ownership_table_apps() <= set(APPS), "the ownership table names an app that does not exist"
