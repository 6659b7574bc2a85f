"""Fast rule-based labellers: the rule labellers of `rule_labeller` (same study of SNLI
dev pairs, same rule), but submitting each batch 1.5 s after it is served (0.3 s an item): the pace
the workers page calls "too fast". Beyond that flag on the workers page, the
quality test counts it as evidence.

    DATABASE_URL=postgres://... .venv/bin/python bench/attacks/run.py --base-url http://127.0.0.1:8831 --only fast_rule_labeller

Ten participants at once; a participant "succeeds" when the page after the last batch shows a code.
"""

from bench.attacks.rule_labeller import run_labellers

NAME = "fast_rule_labeller"
CLAIM = "Rule labellers submitting a batch every 1.5 s earn codes and catch bonuses."
PARTICIPANTS = 10
SECONDS_PER_BATCH = 1.5


def run(base_url: str, *, seed: int = 0) -> dict:
    return run_labellers(
        base_url, seed=seed, tag=NAME, participants=PARTICIPANTS, seconds_per_item=SECONDS_PER_BATCH / 5
    )
