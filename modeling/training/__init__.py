"""Training the baselines on exported snapshots (feature rows 16, 17, 22).

    config.py          the models' names and config defaults (MultiNLI §3), checks on a requested
                       config (no torch, no Django: the web site validates launches with it)
    data.py            a snapshot folder's JSONL files → token ids (checked against manifest.json);
                       length-bucketed batches; mixing (all of A + a fresh p% of B each epoch)
    embeddings.py      random, a GloVe text file (settings.EMBEDDINGS_FILE), or "glove-6b-50d"
    loop.py            the training loop, seeds, early stopping on dev matched, AMP, checkpoints
    checkpoint.py      load a run's checkpoint and predict (no Django)
    evaluate.py        accuracy per split file, matched / mismatched, per genre, per label, confusion
    synthetic.py       synthetic MultiNLI-format rows for tests and bench/
    runner.py          the node's side of a run whatever carries its reports (RunReporter)
    remote.py          a GPU node's line to the platform: the node API over HTTP (HttpReporter)
    snapshot_cache.py  a GPU node's cache of fetched snapshots, keyed by content hash
    storage.py         where checkpoints and served snapshot files are stored (local or S3)
    services.py        launch_training_run, leases, progress and results (DatabaseReporter),
                       execute_training_run, reap_stale_runs
    tasks.py           the Celery tasks run_training and run_packed_training (routed to the `gpu` queue)
                       and the reaper;
                       modeling/tasks.py re-exports them for Celery's autodiscovery

A run's `results` (TrainingRun.results):
    accuracy            {split file: accuracy}, e.g. {"dev_matched": .., "test_mismatched": ..}
    splits              {split file: report}; report = n, correct, accuracy, excluded_no_gold,
                        per_genre {genre: {n, accuracy}}, per_label {label: {n, accuracy}},
                        confusion {labels, matrix (rows gold, columns predicted)}
    dev, test           one report over all of a phase's files (matched and mismatched pooled)
    matched, mismatched {"dev": .., "test": ..} as in MultiNLI Table 4
    train_accuracy, history, best_epoch, epochs_run, stopped_by, device, amp, seconds, config,
    vocab_size, embeddings_covered, restarts (attempts lost with a node or Celery worker), majority_label,
    genre_matrix_file (runs made by `manage.py genre_matrix`: the JSON table they belong to)
"""
