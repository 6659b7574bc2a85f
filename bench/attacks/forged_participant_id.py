"""Attack: a forged participant id on a study connected to its market.

One person holds one real Prolific submission (the owner's) and opens the study link under other
participant ids, each in a fresh browser, with that submission's SESSION_ID (the only id Prolific
would have to vouch for), and finishes each session as a careful person would (the author's label
everywhere). The market STAND-IN (bench/attacks/_market.py; the server asks it, PROLIFIC_API_URL)
says the submission is the owner's.

    PROLIFIC_API_URL=http://127.0.0.1:8899/api/v1/ (the server's) DATABASE_URL=... \\
        .venv/bin/python bench/attacks/run.py --base-url http://127.0.0.1:8000 --only forged_participant_id

Succeeded: a forged id shown a completion code. Refused: no forged id has a code or was shown a
task (the market is asked at arrival, before the first task), and none of the forged ids' labels
count (their ids excluded, so their labels are out of gold).
"""

from . import _common, _market

NAME = "forged_participant_id"
CLAIM = "Participant ids the market does not vouch for earn codes and labels that count."
FORGED = 10


def arrive(browser: _common.Participant, slug: str, participant_id: str, study_id: str, session_id: str) -> int:
    import urllib.parse

    query = urllib.parse.urlencode({"PROLIFIC_PID": participant_id, "STUDY_ID": study_id, "SESSION_ID": session_id})
    status, _, _, _ = browser.request(f"/study/{slug}/?{query}")
    return status


def finish_session(browser: _common.Participant, *, max_batches: int = 4, shown: list[int] | None = None) -> str | None:
    """Work through the session's batches; its completion code, or None. `shown` gets the number
    of pairs each batch showed."""
    for _ in range(max_batches):
        batch = browser.next_batch()
        if isinstance(batch, str):
            return _common.completion_code(batch)
        if shown is not None:
            shown.append(len(batch.items))
        truth = _common.batch_truth(batch.batch_id)
        browser.submit(batch, {item.name: truth[item.name].author_label for item in batch.items if item.name in truth})
    return None


def run(base_url: str, *, seed: int = 0, forged: int = FORGED) -> dict:
    slug = _common.build_validation_study(NAME, seed=seed, premises=30, catch_premises=0, share=0.0, tasks_per_batch=1)
    market = _market.connected_study(slug)
    owners_submission = _market.submission_id()
    owner = f"OWNER{slug[-8:]}"
    market.add_submission(owners_submission, owner)
    codes = ids_shown = pairs_shown = 0
    for number in range(forged):
        browser = _common.Participant(base_url)
        arrive(browser, slug, f"FORGED{slug[-8:]}x{number:02d}", market.study_id, owners_submission)
        shown: list[int] = []
        codes += finish_session(browser, shown=shown) is not None
        ids_shown += bool(shown)
        pairs_shown += sum(shown)

    from corpus.models import ValidationLabel
    from corpus.selectors import labels_that_count
    from crowd.models import StudySession

    sessions = StudySession.objects.filter(study__slug=slug)
    checks = dict.fromkeys(sorted(set(sessions.values_list("market_check", flat=True))), 0) if _has_checks() else {}
    for state in checks:
        checks[state] = sessions.filter(market_check=state).count()
    labels = ValidationLabel.objects.filter(pair__dataset__slug=slug, position__gt=1)
    counting = labels.filter(labels_that_count()).count()
    return {
        "attack": NAME,
        "tries": forged,
        "succeeded": codes,
        "measure": "forged ids shown a completion code",
        "value": codes,
        "interval": _common.wilson_interval(codes, forged),
        # Refused before any task (Prolific is asked at arrival), not only after one.
        "at_chance_or_refused": codes == 0 and counting == 0 and ids_shown == 0,
        "detail": (
            f"{codes} of {forged} forged ids got a code; {ids_shown} were shown {pairs_shown} pairs; "
            f"{counting} of {labels.count()} of their labels count towards gold; the market's checks: "
            f"{checks or 'none (the server asks no market)'}"
        ),
    }


def _has_checks() -> bool:
    from crowd.models import StudySession

    return any(field.name == "market_check" for field in StudySession._meta.get_fields())
