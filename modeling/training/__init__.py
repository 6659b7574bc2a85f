"""Training the baselines on exported snapshots (feature rows 16, 17, 22).

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
