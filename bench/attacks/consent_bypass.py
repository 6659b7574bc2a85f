"""Attack: a participant takes a task of a study with an information sheet without agreeing to it.

Per try, a fresh participant id arrives by the study's link (a study with a sheet) and, without
agreeing, asks every task door: the validation batch, the grammaticality task, the qualification
test; a second participant declines and asks them again; a third agrees, withdraws, and asks them
again. A try succeeds when any of them was served a task (a batch page, a claim of theirs in the
database, or the test's items).

Setup runs Django against the server's database (DATABASE_URL as the server has it).

    DATABASE_URL=... SECRET_KEY=... .venv/bin/python -m bench.attacks.consent_bypass http://127.0.0.1:8877
"""

import re
import secrets
import sys

from bench.attacks._common import Participant, build_validation_study, django_ready, wilson_interval

NAME = "consent-bypass"
CLAIM = "A participant is given a task (or the qualification test) before agreeing to the study's sheet, after declining it, or after withdrawing."
DOORS = ("/validate/next/", "/validate/grammaticality/")
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
VERSION = re.compile(r'name="version" value="([0-9]+)"')


def add_sheet(slug: str) -> None:
    django_ready()
    from consent import services
    from crowd.models import Study

    services.save_information_sheet(Study.objects.get(slug=slug), "## Purpose\n\nAn attack study.", ["I agree."])


def claims_of(participant_id: str) -> int:
    django_ready()
    from validation.models import GrammaticalityClaim, ValidationClaim

    return sum(
        model.objects.filter(worker__external_id=participant_id).count()
        for model in (ValidationClaim, GrammaticalityClaim)
    )


def served(participant: Participant, slug: str) -> bool:
    """Whether any task door served this participant a task."""
    for door in DOORS:
        _, text, location, _ = participant.request(door)
        if "/batch/" in location or 'id="submit-batch"' in text or 'name="grammar-' in text:
            return True
    _, text, _, _ = participant.request(f"/qualify/{slug}/")
    return 'name="try"' in text


def answer_sheet(participant: Participant, slug: str, answer: str) -> None:
    _, page, _, _ = participant.request(f"/study/{slug}/consent/")
    csrf, version = CSRF.search(page), VERSION.search(page)
    if csrf and version:
        participant.request(
            f"/study/{slug}/consent/",
            {"csrfmiddlewaretoken": csrf.group(1), "answer": answer, "version": version.group(1)},
        )


def withdraw(participant: Participant) -> None:
    _, page, _, _ = participant.request("/withdraw/")
    csrf = CSRF.search(page)
    if csrf:
        participant.request("/withdraw/", {"csrfmiddlewaretoken": csrf.group(1)})


def run(base_url, *, seed=0, tries=4):
    slug = build_validation_study(
        "consent", seed=seed, premises=4 * tries, catch_premises=0, share=0.0, tasks_per_batch=2
    )
    add_sheet(slug)
    succeeded = attempts = 0
    for _ in range(tries):
        for way in ("never answered", "declined", "withdrew"):
            attempts += 1
            pid = secrets.token_hex(12)
            participant = Participant(base_url)
            participant.arrive(slug, pid)
            if way == "declined":
                answer_sheet(participant, slug, "decline")
            elif way == "withdrew":
                answer_sheet(participant, slug, "agree")
                participant.request("/validate/next/")  # claims a batch, as a participant at work would
                withdraw(participant)
            before = claims_of(pid)
            got = served(participant, slug) or claims_of(pid) > before
            succeeded += got
    return {
        "attack": NAME,
        "tries": attempts,
        "succeeded": succeeded,
        "measure": "share of participants without consent (never answered, declined, withdrew) served a task",
        "value": succeeded / attempts,
        "interval": wilson_interval(succeeded, attempts),
        "at_chance_or_refused": succeeded == 0,
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8877"), indent=1))
