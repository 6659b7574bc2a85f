"""A state-changing admin action stands on the top floor, calling the service the dashboard calls.

An app's admin sits on its app's floor (tests/test_layering.py) and can see nothing above it. When a
floor above wraps one of the app's writes in a service of its own (the crowd's exclusion in
`quality.services.set_excluded`, which also releases the worker's open claims; the marking in
`validation.services.mark_for_validation`, one transaction with the stopping rule), an admin action
below that floor can only call the bare write and skip what the wrapper adds. So an admin module
beneath the top floor may not:

- call a write service (a `services` module) of another app: that is a door into another app's
  rules, kept on the top floor where every service may be reached (the audit log aside: its
  entry records the admin's own write and adds no rule to it);
- call a function of its own app that a service of a higher floor calls: the higher service is
  the whole write, and only the top floor can reach it.

The top floor's admin (dashboard/admin.py) defines those actions and calls the whole write, as
the dashboard's pages do.
"""

import ast

from tests.test_layering import LAYER_OF, app_of, module_tree, nodes_of, project_modules

TOP = LAYER_OF["dashboard"]
# Another app's service an admin below the top may call: the audit log of its own writes.
LOG_SERVICES = {"audit.services"}


def is_admin_module(name):
    return any(part == "admin" or part.startswith("admin_") for part in name.split(".")[1:])


def is_service_module(name):
    return "services" in name.split(".")[1:]


def called_functions(name, path, modules):
    """{(module, function)}: the project functions the module calls through a name it imported
    (`services.f()` after `from . import services`, or `f()` after `from x.services import f`)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    aliases: dict[str, str] = {}  # local name -> module
    names: dict[str, tuple[str, str]] = {}  # local name -> (module, function)
    tree = module_tree(path)
    for node in nodes_of(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules:
                    aliases[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                local = alias.asname or alias.name
                if f"{base}.{alias.name}" in modules:
                    aliases[local] = f"{base}.{alias.name}"
                elif base in modules:
                    names[local] = (base, alias.name)
    found = set()
    for node in nodes_of(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in aliases:
            found.add((aliases[func.value.id], func.attr))
        elif isinstance(func, ast.Name) and func.id in names:
            found.add(names[func.id])
    return found


def wrapped_by_higher_services(modules):
    """{(module, function): [the higher floors' service modules that call it]}."""
    wrapped: dict[tuple[str, str], list[str]] = {}
    for name, path in modules.items():
        if not is_service_module(name):
            continue
        for target in called_functions(name, path, modules):
            if LAYER_OF[app_of(name)] > LAYER_OF[app_of(target[0])]:
                wrapped.setdefault(target, []).append(name)
    return wrapped


def admin_calls_beneath_the_top(modules=None, admin_modules=None):
    """[why] for each call an admin module beneath the top floor may not make."""
    modules = modules or project_modules()
    wrapped = wrapped_by_higher_services(modules)
    wrong = []
    for name, path in sorted((admin_modules or modules).items()):
        app = app_of(name)
        if not is_admin_module(name) or LAYER_OF[app] >= TOP:
            continue
        for module, function in sorted(called_functions(name, path, modules)):
            if app_of(module) != app and is_service_module(module) and module not in LOG_SERVICES:
                wrong.append(f"{name} calls {module}.{function}, a write service of another app")
            elif app_of(module) == app and (module, function) in wrapped:
                wrappers = ", ".join(sorted(wrapped[module, function]))
                wrong.append(f"{name} calls {module}.{function}, which {wrappers} wraps")
    return wrong


def test_no_admin_beneath_the_top_floor_calls_a_write_it_cannot_see_whole():
    wrong = admin_calls_beneath_the_top()
    assert not wrong, (
        "admin actions that skip what a higher floor adds to the write; define them in dashboard/admin.py, "
        "calling the higher service:\n" + "\n".join(wrong)
    )


def test_the_check_sees_planted_admin_actions(tmp_path):
    """The exclusion the core's admin once made (the bare write) and a call into another app's
    service are both refused beneath the top floor, and both are the top floor's to make."""
    planted = tmp_path / "admin_planted.py"
    planted.write_text(
        "from audit import services as audit\n"
        "from corpus import exclusions\n"
        "from quality.services import set_excluded\n\n\n"
        "def exclude_workers(model_admin, request, queryset):\n"
        "    exclusions.set_workers_excluded(queryset, True, teams=[1])\n"
        "    set_excluded([1], True, teams=[1])\n"
        "    audit.record('admin.planted', actor=request.user)\n",
        encoding="utf-8",
    )
    modules = project_modules()
    assert admin_calls_beneath_the_top(modules, {"corpus.admin_planted": planted}) == [
        "corpus.admin_planted calls corpus.exclusions.set_workers_excluded, which quality.services wraps",
        "corpus.admin_planted calls quality.services.set_excluded, a write service of another app",
    ]
    assert admin_calls_beneath_the_top(modules, {"dashboard.admin_planted": planted}) == []
