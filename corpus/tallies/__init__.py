"""The tally engine (`engine`) and the tallies it keeps (`corpus_tallies`, `worker_tally`; their
tables in `models`): maintained sums that pages and reports read instead of scanning the corpus
(README.md in this folder lists each tally, its writers and its repair command).

`from corpus import tallies` reads the engine's and the corpus tallies' names from here. A value
read at call time (`GATHERED_KEYS_WRITTEN_AT`) is patched on `corpus.tallies.engine`.
"""

from . import engine as engine
from .corpus_tallies import CORPUS as CORPUS
from .corpus_tallies import FLAGS as FLAGS
from .corpus_tallies import HYPOTHESES as HYPOTHESES
from .corpus_tallies import LENGTH_KEY as LENGTH_KEY
from .corpus_tallies import PAIR_KEY as PAIR_KEY
from .corpus_tallies import PAIRS_ONLY as PAIRS_ONLY
from .corpus_tallies import WORD_KEY as WORD_KEY
from .corpus_tallies import LabelMove as LabelMove
from .corpus_tallies import flags_moved as flags_moved
from .corpus_tallies import grouped_truth as grouped_truth
from .corpus_tallies import hypotheses_with_word as hypotheses_with_word
from .corpus_tallies import hypothesis_words as hypothesis_words
from .corpus_tallies import length_counts as length_counts
from .corpus_tallies import length_rows as length_rows
from .corpus_tallies import pair_counts as pair_counts
from .corpus_tallies import pair_key as pair_key
from .corpus_tallies import pair_rows as pair_rows
from .corpus_tallies import pairs_added as pairs_added
from .corpus_tallies import pairs_moved as pairs_moved
from .corpus_tallies import premise_saved as premise_saved
from .corpus_tallies import premises_added as premises_added
from .corpus_tallies import premises_moving as premises_moving
from .corpus_tallies import relation_rows as relation_rows
from .corpus_tallies import spaced_word_count as spaced_word_count
from .corpus_tallies import spaced_word_count_sql as spaced_word_count_sql
from .corpus_tallies import split_moved as split_moved
from .corpus_tallies import word_counts as word_counts
from .corpus_tallies import word_rows as word_rows
from .corpus_tallies import words_moved as words_moved
from .engine import FOLD_LOCK as FOLD_LOCK
from .engine import FOLD_WORK_MEM as FOLD_WORK_MEM
from .engine import GATHERED_KEYS_WRITTEN_AT as GATHERED_KEYS_WRITTEN_AT
from .engine import MAINTAINED as MAINTAINED
from .engine import SHOWN_DRIFT as SHOWN_DRIFT
from .engine import Drift as Drift
from .engine import Key as Key
from .engine import Maintained as Maintained
from .engine import Rows as Rows
from .engine import Truth as Truth
from .engine import _fold as _fold
from .engine import _merge as _merge
from .engine import _vacuum as _vacuum
from .engine import check_and_rebuild as check_and_rebuild
from .engine import column as column
from .engine import delete_started_from as delete_started_from
from .engine import deltas_gathered as deltas_gathered
from .engine import fold as fold
from .engine import folds_deferred as folds_deferred
from .engine import insert_deltas as insert_deltas
from .engine import insert_deltas_together as insert_deltas_together
from .engine import one_snapshot_without_folds as one_snapshot_without_folds
from .engine import scoped as scoped
from .engine import summed as summed
from .models import LengthKind as LengthKind
from .models import LengthTally as LengthTally
from .models import PairTally as PairTally
from .models import Tally as Tally
from .models import WordTally as WordTally
