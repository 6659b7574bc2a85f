"""Run in a daemonic process (no Django): a tagging job's tagging process started from there, as a
Celery worker's prefork child starts it (artifacts.phenomenon_tagger._spawn_context)."""


def tag_in_a_daemon(pairs, results):
    try:
        from artifacts.phenomenon_tagger import load_tagger

        items = ((premise, hypothesis, False) for premise, hypothesis in pairs)
        results.put([sorted(tags) for tags, _, _ in load_tagger().tag_for_job(items, batch_size=2, processes=1)])
    except Exception as error:  # the test shows what went wrong in the daemon
        results.put(f"{type(error).__name__}: {error}")
