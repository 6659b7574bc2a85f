"""The workers' figures kept as tallies, by the name their readers import: the module is
`corpus.tallies.worker_tally`, with the rest of the tally engine."""

from .tallies.worker_tally import ANCHOR_SECONDS as ANCHOR_SECONDS
from .tallies.worker_tally import BUCKETS_PER_DOUBLING as BUCKETS_PER_DOUBLING
from .tallies.worker_tally import FIGURE_NAMES as FIGURE_NAMES
from .tallies.worker_tally import LABEL_KEY as LABEL_KEY
from .tallies.worker_tally import MIDDLE_NAMES as MIDDLE_NAMES
from .tallies.worker_tally import PAIRS_PER_READ as PAIRS_PER_READ
from .tallies.worker_tally import SECONDS_KEY as SECONDS_KEY
from .tallies.worker_tally import TABLES as TABLES
from .tallies.worker_tally import TALLY as TALLY
from .tallies.worker_tally import WRITER_KEY as WRITER_KEY
from .tallies.worker_tally import Key as Key
from .tallies.worker_tally import bucket_bounds as bucket_bounds
from .tallies.worker_tally import bucket_sql as bucket_sql
from .tallies.worker_tally import leave_one_out_gold as leave_one_out_gold
from .tallies.worker_tally import moved as moved
from .tallies.worker_tally import others_gold as others_gold
from .tallies.worker_tally import pairs_added as pairs_added
from .tallies.worker_tally import pairs_moving_split as pairs_moving_split
from .tallies.worker_tally import read as read
from .tallies.worker_tally import scored_labels as scored_labels
from .tallies.worker_tally import truth as truth
from .tallies.worker_tally import worker_sums as worker_sums
from .tallies.worker_tally import writer_sums as writer_sums
from .tallies.worker_tally import written_label_counts as written_label_counts
