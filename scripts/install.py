"""Install the requirements into the virtual environment this runs in (`make install`).

With uv (`uv pip install`, installed into the environment by pip first) where it can be had, else
with pip alone; the same pinned packages either way. uv installs them in a fraction of pip's time
(docs/checks.md: 83 s with pip, 31 s with uv and its bytecode, on a fresh clone with an empty cache),
and every CI run and every newcomer's first `make demo` starts from a fresh environment.

uv reads no pip configuration, so pip's (its config files and PIP_* variables: the indexes,
find-links folders and constraints a machine sets) is handed to it as options; with several indexes
uv looks at all of them for the best version, as pip does (`--index-strategy unsafe-best-match`).
"""

import os
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS = ["-r", str(ROOT / "requirements-dev.txt")]
# crowd-kit declares dependencies its aggregation never imports (requirements-nodeps.txt).
WITHOUT_DEPENDENCIES = ["--no-deps", "-r", str(ROOT / "requirements-nodeps.txt")]
UV = "uv==0.13.9"
# pip's configuration names and the uv options that take the same values.
OPTIONS = {
    "index-url": "--index-url",
    "extra-index-url": "--extra-index-url",
    "find-links": "--find-links",
    "constraint": "--constraint",
}


def run(command: list[str], env: dict[str, str] | None = None) -> bool:
    return subprocess.run(command, env=env).returncode == 0


def pip(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "pip", *arguments]


def pip_configuration() -> dict[str, list[str]]:
    """{pip option: values} as pip itself resolves them (`pip config list`: files and PIP_* variables)."""
    listed = subprocess.run(pip("config", "list"), capture_output=True, text=True, check=False).stdout
    settings: dict[str, list[str]] = {}
    for line in listed.splitlines():
        name, _, value = line.partition("=")
        option = name.rpartition(".")[2]
        if option in OPTIONS or option == "cert":
            # A value is quoted as Python writes it; several values are separated by whitespace.
            settings[option] = [part for word in shlex.split(value) for part in word.split()]
    for option in OPTIONS:  # a PIP_* variable wins over the files, as it does for pip
        variable = os.environ.get("PIP_" + option.upper().replace("-", "_"))
        if variable:
            settings[option] = variable.split()
    return settings


def uv_command(settings: dict[str, list[str]], *arguments: str) -> list[str]:
    options = [
        "--python",
        sys.executable,
        "--index-strategy",
        "unsafe-best-match",
        "--compile-bytecode",  # as pip does: processes import compiled modules (PYTHONDONTWRITEBYTECODE may be set)
        "--quiet",
    ]
    for option, flag in OPTIONS.items():
        for value in settings.get(option, []):
            options += [flag, value]
    return [sys.executable, "-m", "uv", "pip", "install", *options, *arguments]


def with_uv() -> bool:
    if not run(pip("install", "--quiet", UV)):
        return False
    settings = pip_configuration()
    env = dict(os.environ)
    if settings.get("cert"):
        env.setdefault("SSL_CERT_FILE", settings["cert"][0])
    return run(uv_command(settings, *REQUIREMENTS), env) and run(uv_command(settings, *WITHOUT_DEPENDENCIES), env)


def with_pip() -> bool:
    return run(pip("install", "--quiet", *REQUIREMENTS)) and run(pip("install", "--quiet", *WITHOUT_DEPENDENCIES))


def main() -> int:
    if with_uv():
        return 0
    print("uv could not install the requirements: installing them with pip instead", file=sys.stderr)
    return 0 if with_pip() else 1


if __name__ == "__main__":
    sys.exit(main())
