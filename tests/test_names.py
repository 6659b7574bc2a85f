"""Names that say one thing (docs/architecture.md, "Words").

A *worker* is a crowdworker; a machine that trains runs is a *node* and a Celery process a
*Celery worker*. A *claim* is a crowdworker's hold on a task; a node's hold on a training run is
a *lease*. *Artifacts* are annotation artifacts (the artifacts app); training writes checkpoints
and results. These checks read the training code's identifiers (not its strings: the node API's
paths and JSON keys keep their old words for nodes already deployed, docs/gpu-nodes.md) and the
prose of the docs and of the files that set up Celery and the machines (settings, compose files,
Makefile), where a process is a Celery worker or a process, never a bare worker.
"""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Where a worker can only be a node or a Celery worker: the training side of the modeling app.
TRAINING_CODE = [
    "modeling/models.py",
    "modeling/admin.py",
    "modeling/tasks.py",
    "modeling/training",
    "modeling/api/node.py",
    "modeling/api/node_auth.py",
    "modeling/api/training_runs.py",
    "modeling/management/commands/create_node_token.py",
    "modeling/management/commands/reap_training_runs.py",
    "modeling/management/commands/train.py",
]
# Celery's and the standard library's own names.
FOREIGN_WORKER_NAMES = {"worker_shutting_down", "reject_on_worker_lost", "max_workers"}
# The node API's request fields are its JSON keys, which nodes already deployed send.
WIRE_NAMES = {("modeling/api/node.py", "claim")}

PROSE = [
    "README.md",
    "docs",
    "templates/dashboard",
    "modeling",
    # Where Celery and the machines are set up and described.
    "annotation_site/settings.py",
    "annotation_site/celery.py",
    "annotation_site/test_settings.py",
    "docker-compose.yml",
    "docker-compose.gpu-node.yml",
    "Dockerfile",
    "Makefile",
    "gunicorn.conf.py",
]
# Phrases that mix the words up ("node token", "node", "Celery worker" say these things). The
# service and make target `gpu-worker` are names, and run Celery workers: they may stay.
BANNED_PHRASES = re.compile(r"\bGPU workers?\b|\bworker tokens?\b|\btraining artifacts?\b", re.IGNORECASE)
# A process that dies or is started is a Celery worker (or just a process), never a bare worker.
PROCESS_AS_WORKER = re.compile(
    r"(?<!Celery )\bworkers? (?:sub)?process(?:es)?\b|(?<!Celery )\bworker (?:that )?died\b|\bdead worker\b|\bwhole worker\b",
    re.IGNORECASE,
)


def identifiers(tree):
    """(line, name) of every name the code gives or uses: variables, attributes, functions,
    classes, arguments, keyword arguments and import aliases (not strings, not module paths)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            yield node.lineno, node.id
        elif isinstance(node, ast.Attribute):
            yield node.lineno, node.attr
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.lineno, node.name
        elif isinstance(node, ast.arg):
            yield node.lineno, node.arg
        elif isinstance(node, ast.keyword) and node.arg:
            yield node.value.lineno, node.arg
        elif isinstance(node, ast.alias):
            yield node.lineno, (node.asname or node.name).split(".")[-1]


def misnamed(source, path=""):
    """'path:line name (why)' for each identifier of training code that uses a word for something else."""
    found = []
    for line, name in identifiers(ast.parse(source)):
        lower = name.lower()
        if (path, name) in WIRE_NAMES:
            continue
        if "claim" in lower:
            found.append(f"{path}:{line} {name} (a node holds a run under a lease; a claim is a crowdworker's)")
        if "worker" in lower and "celery_worker" not in lower and name not in FOREIGN_WORKER_NAMES:
            found.append(f"{path}:{line} {name} (a GPU machine is a node, a Celery process a Celery worker)")
        if "artifact" in lower:
            found.append(f"{path}:{line} {name} (training writes checkpoints and results; artifacts are annotations')")
    return found


def python_files(entries):
    for entry in entries:
        path = ROOT / entry
        yield from sorted(path.rglob("*.py")) if path.is_dir() else [path]


def test_training_code_says_node_lease_and_checkpoint():
    found = []
    for path in python_files(TRAINING_CODE):
        found += misnamed(path.read_text(), str(path.relative_to(ROOT)))
    assert not found, "\n".join(found)


def test_no_module_of_the_modeling_app_is_named_for_a_worker_a_claim_or_artifacts():
    names = [p.relative_to(ROOT) for p in (ROOT / "modeling").rglob("*.py") if "migrations" not in p.parts]
    bad = [str(p) for p in names if re.search(r"worker|claim|artifact", p.stem)]
    assert not bad, bad


def prose_lines():
    """(file, line number, line) of every file in PROSE (a folder's .md, .html and .py files)."""
    for entry in PROSE:
        path = ROOT / entry
        files = (
            [path] if path.is_file() else [p for p in sorted(path.rglob("*")) if p.suffix in {".md", ".html", ".py"}]
        )
        for file in files:
            if "migrations" in file.parts:
                continue  # history: the migrations say what the names were
            for number, line in enumerate(file.read_text().splitlines(), start=1):
                yield file.relative_to(ROOT), number, line


def test_docs_and_pages_never_say_gpu_worker_or_worker_token():
    found = [f"{file}:{number}: {line.strip()}" for file, number, line in prose_lines() if BANNED_PHRASES.search(line)]
    assert not found, "\n".join(found)


def test_docs_and_setup_never_call_a_process_a_bare_worker():
    found = [
        f"{file}:{number}: {line.strip()}" for file, number, line in prose_lines() if PROCESS_AS_WORKER.search(line)
    ]
    assert not found, "\n".join(found)


def test_the_check_catches_the_old_names_and_passes_the_new():
    old = """
from modeling.training.worker import RunSpec as WorkerSpec
def claim(reporter, worker_token, claim_id=None):
    run.worker_hostname = reporter.claim(run_id=1)
    save_artifacts(path)
"""
    bad = {entry.split()[1] for entry in misnamed(old)}
    assert bad == {"WorkerSpec", "claim", "worker_token", "claim_id", "worker_hostname", "save_artifacts"}
    new = """
from celery.signals import worker_shutting_down
def lease(reporter, node_token, lease_id=None, celery_worker_commands=None):
    run.node_hostname = reporter.lease(run_id=1)
"""
    assert misnamed(new) == []
    assert misnamed("class S:\n    claim = 1\n", "modeling/api/node.py") == []  # a wire name
    assert BANNED_PHRASES.search("a GPU worker trains") and not BANNED_PHRASES.search("a Celery worker trains")
    for old_words in (
        "a run left by a dead worker",
        "a whole worker killed",
        "a worker that died",
        "2 worker processes",
    ):
        assert PROCESS_AS_WORKER.search(old_words), old_words
    for new_words in (
        "a dead Celery worker",
        "a Celery worker that died",
        "Celery worker processes",
        "a worker's task",
    ):
        assert not PROCESS_AS_WORKER.search(new_words), new_words


def test_every_model_has_an_english_plural_in_the_admin():
    """Django adds an "s": "monitor refreshs", "pair tallys". A model whose name ends in
    y, s, sh, ch or x names its plural."""
    from django.apps import apps

    wrong = [
        f"{model._meta.label}: {model._meta.verbose_name_plural}"
        for model in apps.get_models()
        if model._meta.app_config.path.startswith(str(ROOT))
        and re.search(r"([^aeiou]ys|shs|chs|xs|ss)$", str(model._meta.verbose_name_plural))
    ]
    assert wrong == []
