"""Attack: one participant's withdrawal mid-batch costs another participant their work, or leaves
the withdrawn participant's places held.

Per try, two fresh participants of a study with an information sheet agree and claim a batch each;
the first withdraws; the second submits their batch. A try succeeds (the platform failed) when the
second's submit did not count, any of the second's claims was released, or any of the first's
claims is still open after the withdrawal.

Setup runs Django against the server's database (DATABASE_URL as the server has it).

    DATABASE_URL=... SECRET_KEY=... .venv/bin/python -m bench.attacks.withdrawal_mid_batch http://127.0.0.1:8877
"""

import sys

from bench.attacks._common import Participant, build_validation_study, django_ready, wilson_interval
from bench.attacks.consent_bypass import add_sheet, answer_sheet, withdraw

NAME = "withdrawal-mid-batch"
CLAIM = "A participant's withdrawal loses another participant's work, or keeps the withdrawn one's places held."


def state(participant_id: str) -> tuple[set[str], int]:
    """(the statuses of the participant's validation claims, the tasks their session counted)."""
    django_ready()
    from crowd.models import StudySession
    from validation.models import ValidationClaim

    statuses = set(ValidationClaim.objects.filter(worker__external_id=participant_id).values_list("status", flat=True))
    done = sum(StudySession.objects.filter(worker__external_id=participant_id).values_list("tasks_done", flat=True))
    return statuses, done


def run(base_url, *, seed=0, tries=4):
    import secrets

    slug = build_validation_study(
        "withdraw", seed=seed, premises=6 * tries, catch_premises=0, share=0.0, tasks_per_batch=3
    )
    add_sheet(slug)
    failed = 0
    for _ in range(tries):
        leaving_id, staying_id = secrets.token_hex(12), secrets.token_hex(12)
        leaving, staying = Participant(base_url), Participant(base_url)
        for participant, pid in ((leaving, leaving_id), (staying, staying_id)):
            participant.arrive(slug, pid)
            answer_sheet(participant, slug, "agree")
        leaving.next_batch()
        batch = staying.next_batch()
        if isinstance(batch, str):
            raise RuntimeError("The staying participant got no batch: the study setup did not work.")
        withdraw(leaving)
        staying.submit(batch, {item.name: "neutral" for item in batch.items})
        leaving_statuses, _ = state(leaving_id)
        staying_statuses, staying_done = state(staying_id)
        lost = staying_statuses != {"submitted"} or staying_done != 1
        held = "open" in leaving_statuses
        failed += lost or held
    return {
        "attack": NAME,
        "tries": tries,
        "succeeded": failed,
        "measure": "share of withdrawals that cost the other participant work or kept the withdrawn one's places",
        "value": failed / tries,
        "interval": wilson_interval(failed, tries),
        "at_chance_or_refused": failed == 0,
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8877"), indent=1))
