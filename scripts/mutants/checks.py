"""Mutants of the checks and the long tasks: each a bug that
once went unnoticed, or could, with the tests that must now fail when it is injected.

    .venv/bin/python scripts/mutation_pass.py --area checks
"""

from scripts.mutation_pass import Mutant

LOGIN_PROXY = "tests/test_login_proxy_and_counter.py"
OVERLAP = [
    f"{LOGIN_PROXY}::test_overlapping_counts_lose_nothing_in_local_memory",
    f"{LOGIN_PROXY}::test_overlapping_counts_lose_nothing_in_the_configured_cache",
]
BOUNDARIES = "tests/authorship/test_refusal_boundaries.py"
CHECKPOINT_RELEASE = "tests/modeling/test_checkpoint_and_release_checks.py"
TAKE = "tests/test_long_task_take.py"
CATCH = "tests/quality/test_catch_only_minimum.py"
SHAPE_HOLDS = "tests/collection/test_shape_holds.py"

MUTANTS = [
    # --- item 8: the client's address behind a proxy
    Mutant(
        path="base/login_throttle.py",
        old='return str(address).split(",")[-1].strip()[:64]',
        new='return str(address).split(",")[0].strip()[:64]',
        tests=[LOGIN_PROXY],
        behaviour="the client's address is the last X-Forwarded-For entry, not the forgeable first",
    ),
    Mutant(
        path="base/login_throttle.py",
        old='address = request.META.get(header, "") or request.META.get("REMOTE_ADDR", "")',
        new='address = request.META.get("REMOTE_ADDR", "")',
        tests=[LOGIN_PROXY],
        behaviour="the proxy-header setting (LOGIN_CLIENT_IP_HEADER) is obeyed",
    ),
    # --- item 9: the login counter is one atomic increment
    Mutant(
        path="base/login_throttle.py",
        old="            return cache.incr(key)\n",
        new="            count = cache.get(key) + 1\n            cache.set(key, count, timeout=timeout)\n"
        "            return count\n",
        tests=OVERLAP,
        behaviour="overlapping login counts lose nothing (no get-then-set)",
    ),
    # --- item 10: what a study that refuses pasted text refuses
    Mutant(
        path="authorship/judgements.py",
        old="{Flag.PASTED, Flag.NOT_TYPED, Flag.PASTED_AFTER_AWAY, Flag.NO_EVIDENCE,",
        new="{Flag.PASTED, Flag.PASTED_AFTER_AWAY, Flag.NO_EVIDENCE,",
        tests=[BOUNDARIES],
        behaviour="a field set by a script is refused like a pasted one",
    ),
    Mutant(
        path="authorship/evidence.py",
        old="len(raw) > MAX_EVIDENCE_CHARS:",
        new="len(raw) > 2 * MAX_EVIDENCE_CHARS:",
        tests=[BOUNDARIES],
        behaviour="a typing record over its size limit is not read",
    ),
    Mutant(
        path="authorship/judgements.py",
        old="chars > MOST_OF_THE_TEXT * text_chars",
        new="chars >= MOST_OF_THE_TEXT * text_chars",
        tests=[BOUNDARIES],
        behaviour="'most of the text' is more than half (exactly half is not)",
    ),
    # --- item 11: a majority checkpoint names one of its classes
    Mutant(
        path="modeling/training/checkpoint.py",
        old="if not 0 <= label < len(info.labels):",
        new="if not 0 <= label <= len(info.labels):",
        tests=[CHECKPOINT_RELEASE],
        behaviour="a majority checkpoint whose label is one past the last class is refused",
    ),
    # --- item 12: releases
    Mutant(
        path="modeling/release.py",
        old="if snapshot.status != JobStatus.DONE:",
        new="if snapshot.status == JobStatus.PENDING:",
        tests=[CHECKPOINT_RELEASE],
        behaviour="a failed snapshot is not released, even with its folder on disk",
    ),
    Mutant(
        path="modeling/release.py",
        old="if sha and sha256_of_file(path) != sha:",
        new="if False and sha256_of_file(path) != sha:",
        tests=[CHECKPOINT_RELEASE],
        behaviour="a release checks every file against the manifest's sha256",
    ),
    # --- item 13: long_tasks.take on running rows
    Mutant(
        path="base/long_tasks.py",
        old="| Q(status=JobStatus.RUNNING, heartbeat_at__lt=now - timedelta(seconds=settings.LONG_TASK_STALE_SECONDS))",
        new="| Q(status=JobStatus.RUNNING)",
        tests=[TAKE],
        behaviour="a running row with a fresh heartbeat is not taken (no second run of a redelivered task)",
    ),
    Mutant(
        path="base/long_tasks.py",
        old="| Q(status=JobStatus.RUNNING, heartbeat_at__isnull=True, started_at__lt=now - STALE_RUNNING_AFTER)",
        new="| Q(status=JobStatus.RUNNING, heartbeat_at__isnull=True)",
        tests=[TAKE],
        behaviour="a running row without a heartbeat is taken only after STALE_RUNNING_AFTER",
    ),
    # --- item 14: catch_only needs three catch trials
    Mutant(
        path="quality/sequential.py",
        old="        catch_seen < CATCH_ONLY_MIN_SEEN\n",
        new="        catch_seen < 1\n",
        tests=[CATCH],
        behaviour="catch_only needs at least three catch trials",
    ),
    # --- more: the catch bar, the reaper, the lockout, the shape holds
    Mutant(
        path="quality/sequential.py",
        old="catch_matched / catch_seen < CATCH_ONLY_MIN_ACCURACY",
        new="catch_matched / catch_seen < 0.5",
        tests=[CATCH],
        behaviour="catch_only needs 80% of the catch trials right",
    ),
    Mutant(
        path="base/long_tasks.py",
        old='return Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, **{f"{kind.started_field}__lt": cutoff})',
        new="return Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True)",
        tests=["tests/test_long_tasks.py::test_a_row_that_never_beat_is_judged_by_when_it_started"],
        behaviour="the reaper judges a row that never beat by when it started",
    ),
    Mutant(
        path="base/long_tasks.py",
        old="filter(pk=pk, status=JobStatus.RUNNING, restarts=restarts)",
        new="filter(pk=pk, status=JobStatus.RUNNING)",
        tests=[
            "tests/test_long_tasks.py::test_an_import_taken_over_by_its_restart_keeps_nothing_of_the_slow_run",
            f"{TAKE}::test_a_slow_run_whose_row_its_restart_took_again_keeps_nothing",
        ],
        behaviour="a run taken over by its restart keeps nothing (hold_as_taken checks the restart count)",
    ),
    Mutant(
        path="base/login_throttle.py",
        old='> limits["per_account"] and not cache.get(keys["known"]):',
        new='> limits["per_account"]:',
        tests=[
            "tests/test_logins_and_tokens.py::"
            "test_many_addresses_pause_the_account_except_where_the_owner_logged_in_before"
        ],
        behaviour="an account paused from many addresses still lets its owner in from a known address",
    ),
    Mutant(
        path="collection/sentence_shape.py",
        old="return refused >= SHAPE_HOLD_MIN_REFUSALS and refused >= SHAPE_HOLD_SHARE * sent",
        new="return refused >= SHAPE_HOLD_MIN_REFUSALS",
        tests=[f"{SHAPE_HOLDS}::test_the_threshold_needs_both_a_count_and_a_share"],
        behaviour="a shape hold needs a share of the hypotheses sent, not only a count",
    ),
    Mutant(
        path="collection/shape_holds.py",
        old='"sentences refused for their shape", check=hold_code_of_salad)',
        new='"sentences refused for their shape")',
        tests=[f"{SHAPE_HOLDS}::test_a_session_refused_for_salad_again_and_again_has_its_code_held_with_the_reason"],
        behaviour="a session refused for salad again and again has its code held",
    ),
    Mutant(
        path="collection/shape_holds.py",
        old="        if key not in known:\n",
        new="        if True:\n",
        tests=[f"{SHAPE_HOLDS}::test_a_page_sent_again_unchanged_counts_its_refused_sentence_once"],
        behaviour="a refused sentence sent again unchanged counts once",
    ),
    Mutant(
        path="adversarial/services.py",
        old="    if study_session is None or not shape_holds.writes_salad(study_session):\n",
        new="    if True:\n",
        tests=["tests/adversarial/test_salad_holds.py"],
        behaviour="a salad session's fooled examples wait out of verification while its code is held",
    ),
]
