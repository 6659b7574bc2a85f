"""The word-by-word relations moved to the core (corpus.overlap): writers tally them per pair."""

from corpus.overlap import *  # noqa: F403
from corpus.overlap import OVERLAP_THRESHOLD, relation_counts, tokens  # noqa: F401
