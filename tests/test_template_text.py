"""What no page shows as text: a template comment (Django's `{# ... #}` is a comment on one line
only, and one that spans lines is rendered to the participant as it was typed), or words about a
database the platform does not run on."""

from pathlib import Path
from typing import cast

from django.template import engines
from django.template.backends.django import DjangoTemplates
from django.template.base import Lexer, TokenType

REPO = Path(__file__).resolve().parent.parent


def template_files():
    folders = [Path(folder) for folder in cast(DjangoTemplates, engines["django"]).engine.dirs]
    folders += [path for path in REPO.glob("*/templates") if ".venv" not in path.parts]
    return sorted({path for folder in folders for path in folder.rglob("*.html")})


def comment_marks_in_text(source: str) -> list[int | None]:
    """The lines of text tokens (what a page renders as typed) that carry a comment's marks."""
    return [
        token.lineno
        for token in Lexer(source).tokenize()
        if token.token_type is TokenType.TEXT and ("{#" in token.contents or "#}" in token.contents)
    ]


def test_the_check_finds_a_comment_that_spans_lines():
    assert comment_marks_in_text("<p>a</p>\n{# one line #}\n<p>b</p>") == []
    assert comment_marks_in_text("<p>a</p>\n{# two\n lines #}\n<p>b</p>") == [1]


def test_no_template_renders_a_comment_as_text():
    files = template_files()
    assert len(files) > 50, files
    shown = {
        str(path.relative_to(REPO)): lines
        for path in files
        if (lines := comment_marks_in_text(path.read_text(encoding="utf-8")))
    }
    assert not shown, f"template comments rendered as text (use {{% comment %}} across lines): {shown}"


def test_no_page_speaks_of_a_database_the_platform_does_not_run_on():
    """PostgreSQL is the only database: a page that says what happens "on SQLite" is out of date."""
    said = [str(path.relative_to(REPO)) for path in template_files() if "sqlite" in path.read_text().lower()]
    assert not said, said
