"""The reads behind each dashboard page, one module per page: aggregate SQL, never a loop over rows.

Per-pair counters (Pair.label_count, *_votes, gold_label) stand in for counting the label table.
Importing this package registers every figure a task may recompute (figure_cache.refreshable).
"""

from . import artifacts, collection, corpus, costs, quality, study, validation, workers  # noqa: F401
