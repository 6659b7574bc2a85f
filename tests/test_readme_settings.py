"""The README's table of settings gives the defaults the settings module uses."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# `os.environ.get("NAME", "3")`, `env_int("NAME", 3)`, `env_bool("NAME", default=False)` and the like.
ENV_DEFAULT = re.compile(r'"([A-Z][A-Z_0-9]+)",\s*(?:default=)?"?([0-9.]+)"?\)')
VARIABLE = re.compile(r"`([A-Z][A-Z_0-9]+)`")


def numeric_defaults_in_settings(source: str) -> dict[str, str]:
    return dict(ENV_DEFAULT.findall(source))


def defaults_in_readme(readme: str) -> dict[str, str]:
    """Variable -> default, from the table rows that name as many variables as they give defaults."""
    found: dict[str, str] = {}
    for line in readme.splitlines():
        if not line.startswith("| `"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        names, values = VARIABLE.findall(cells[0]), [value.strip() for value in cells[-1].split(",")]
        if names and len(names) == len(values):
            found.update((name, value) for name, value in zip(names, values, strict=True))
    return found


def test_the_check_reads_a_row_of_several_variables():
    row = "| `A_MINUTES`, `B_TIMES` | what they mean | 3, 2 |"
    assert defaults_in_readme(row) == {"A_MINUTES": "3", "B_TIMES": "2"}
    assert numeric_defaults_in_settings('x = int(os.environ.get("B_TIMES", "1"))') == {"B_TIMES": "1"}


def test_every_numeric_default_the_readme_gives_is_the_settings_default():
    in_settings = numeric_defaults_in_settings((REPO / "annotation_site" / "settings.py").read_text())
    in_readme = defaults_in_readme((REPO / "README.md").read_text())
    compared = {
        name: (said, in_settings[name])
        for name, said in in_readme.items()
        if name in in_settings and re.fullmatch(r"[0-9.]+", said)
    }
    assert len(compared) >= 5, compared
    wrong = {name: pair for name, pair in compared.items() if float(pair[0]) != float(pair[1])}
    assert not wrong, f"README default (said, settings): {wrong}"


def test_the_hold_settings_are_all_in_the_readme():
    readme = (REPO / "README.md").read_text()
    assert all(f"`{name}`" in readme for name in ("HOLD_WARNING_MINUTES", "HOLD_EXTENSIONS", "HOLD_TAKE_BACKS"))
