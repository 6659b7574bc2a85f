"""Does a hypothesis read as a sentence? Shuffled common words ("Banana water purple under city
simply chair.") are English words, one sentence, and passed every other writing rule; what they
lack is the shape of English: a verb, determiners before nouns, adjectives and adverbs where English
puts them.

The check parses the hypothesis with the installed spaCy pipeline (nothing is downloaded) and counts
the kinds of shape a sentence breaks (`SHAPE_FAULTS`). One fault alone is ordinary in real writing
(SNLI's "A man outside.", "dog in pool"), and the small parser misreads some real sentences. A
hypothesis is refused when its faults weigh `REFUSE_AT` or more (SNLI dev 0.07%:
bench/sentence_check.py) and the writer is warned when they weigh `WARN_AT` (another 0.21%): a
warning is a refusal the writer overrides by sending the same sentence again. Most content-word
salad is refused (57%) or warned (another 19%); a parse judges shape, not sense.

Django-free; the model is loaded once per process, or borrowed from artifacts' tagger when that one
is loaded with its parser.
"""

import logging
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

# (name, weight, what the writer is told is wrong). The weights: a fault that real hypotheses show
# in under 1% of cases while most salad shows it weighs 2; the others 1 (measured in bench/sentence_check.py).
SHAPE_FAULTS: dict[str, tuple[int, str]] = {
    "no_verb": (1, "it has no verb"),
    "no_determiner": (2, "its nouns have no word such as 'a', 'the' or 'two' before them"),
    "bare_noun": (1, "a noun that needs 'a' or 'the' has none"),
    "odd_head": (2, "its main word is not a noun or a verb"),
    "adverb_on_noun": (2, "an adverb such as 'simply' describes a noun"),
    "adjective_as_noun": (1, "an adjective stands where a noun should"),
    "modifier_after_noun": (1, "a describing word comes after its noun"),
    "dangling_end": (1, "it ends on a word such as 'the', 'and' or 'under'"),
    "lowercase_name": (1, "common words read as a name"),
    "noun_pile": (1, "four or more nouns are piled up"),
}
REFUSE_AT = 4  # refused outright: 7 of SNLI dev's 10,000 hypotheses
WARN_AT = 3  # warned, the writer may send it again unchanged: 21 more of SNLI dev's

# What a study does with a hypothesis's shape (Study.shape_check).
SHAPE_REFUSE, SHAPE_WARN, SHAPE_OFF = "refuse", "warn", "off"

_DETERMINING = frozenset({"det", "poss", "nummod", "predet", "quantmod"})
_BARE_ROLES = frozenset({"nsubj", "nsubjpass", "ROOT", "attr", "appos", "npadvmod"})
_PREMODIFIERS = frozenset({"det", "poss", "amod", "nummod", "compound", "predet", "nmod"})
_NOUN_TAGS = frozenset({"NN", "NNS", "NNP", "NNPS"})
_DETERMINING_TAGS = frozenset({"PRP", "PRP$", "DT", "CD", "EX"})
# "one another", "each other", "something else": real phrases the parser labels as misplaced words.
_RECIPROCAL = frozenset({"another", "other", "else"})
# Focus and degree adverbs do modify noun phrases: "only families", "nearly everyone".
_NOUN_PHRASE_ADVERBS = frozenset(
    [
        "only",
        "nearly",
        "mostly",
        "mainly",
        "largely",
        "merely",
        "partly",
        "early",
        "really",
        "exactly",
        "fully",
        "roughly",
        "approximately",
    ]
)
# Tagged NN by the parser, yet need no determiner.
_PRONOUN_LIKE = frozenset(
    [
        "someone",
        "something",
        "somebody",
        "anyone",
        "anything",
        "anybody",
        "everyone",
        "everything",
        "everybody",
        "noone",
        "nobody",
        "nothing",
        "one",
    ]
)


@dataclass(frozen=True)
class Shape:
    faults: tuple[str, ...]

    @property
    def weight(self) -> int:
        return sum(SHAPE_FAULTS[name][0] for name in self.faults)

    @property
    def reads_as_sentence(self) -> bool:
        """Not refused outright under the default rules (a warning may still be due)."""
        return self.weight < REFUSE_AT


@dataclass(frozen=True)
class ShapeRules:
    """A study's shape check: `check` is SHAPE_REFUSE (refused from `refuse_at`, warned from
    WARN_AT below it), SHAPE_WARN (warned from the lower of the two, never refused) or SHAPE_OFF."""

    check: str = SHAPE_REFUSE
    refuse_at: int = REFUSE_AT

    @property
    def warn_at(self) -> int:
        return min(WARN_AT, self.refuse_at)


REFUSED, WARNED = "refused", "warned"


def verdict(shape: Shape | None, rules: ShapeRules = ShapeRules()) -> str | None:
    """REFUSED, WARNED or None (passes) for a parsed hypothesis under a study's shape rules."""
    if shape is None or rules.check == SHAPE_OFF or shape.weight < rules.warn_at:
        return None
    if rules.check == SHAPE_REFUSE and shape.weight >= rules.refuse_at:
        return REFUSED
    return WARNED


def doc_faults(doc: Any) -> tuple[str, ...]:  # a spaCy Doc with tags and dependencies
    """The kinds of sentence shape a parsed sentence breaks, each once, in `SHAPE_FAULTS` order."""
    found: set[str] = set()
    tokens = [token for token in doc if not token.is_space]
    words = [token for token in tokens if not token.is_punct]
    if not any(token.tag_.startswith("VB") or token.tag_ == "MD" for token in tokens):
        found.add("no_verb")
    determiners = sum(1 for t in tokens if t.dep_ in _DETERMINING or t.tag_ in _DETERMINING_TAGS)
    unmodified_nouns = sum(1 for t in tokens if t.tag_ == "NN" and t.dep_ != "compound")
    if determiners == 0 and unmodified_nouns >= 2:
        found.add("no_determiner")
    for token in tokens:
        lower, head = token.lower_, token.head
        if (
            token.tag_ == "NN"
            and token.dep_ in _BARE_ROLES
            and token.i > 0  # headline style, "Woman pushing a bicycle.", starts on a bare noun
            and lower not in _PRONOUN_LIKE
            and not any(child.dep_ in _DETERMINING for child in token.children)
        ):
            found.add("bare_noun")
        if token.dep_ in _PREMODIFIERS and head.i < token.i and lower not in _RECIPROCAL:
            found.add("modifier_after_noun")
        manner_adverb = lower.endswith("ly") and lower not in _NOUN_PHRASE_ADVERBS
        if token.tag_ == "RB" and token.dep_ == "advmod" and head.tag_ in _NOUN_TAGS and manner_adverb:
            found.add("adverb_on_noun")
        adjective_role = token.dep_ in ("compound", "nmod", "npadvmod", "nsubj", "dobj")
        if token.tag_.startswith("JJ") and adjective_role and lower not in _RECIPROCAL:
            found.add("adjective_as_noun")
        if token.tag_ in ("NNP", "NNPS") and token.text.islower():
            found.add("lowercase_name")
        if (
            token.dep_ in ("compound", "nmod")
            and head.dep_ in ("compound", "nmod")
            and head.head.dep_ in ("compound", "nmod")
        ):
            found.add("noun_pile")
    if words and words[-1].tag_ in ("DT", "CC", "IN", "TO", "PRP$") and words[-1].lower_ not in _RECIPROCAL:
        found.add("dangling_end")
    if tokens and doc[:].root.tag_ in ("JJ", "IN", "RB", "DT", "CC"):
        found.add("odd_head")
    return tuple(name for name in SHAPE_FAULTS if name in found)


# --- the model ---------------------------------------------------------------------------------

_UNUSED = ("ner", "lemmatizer", "senter", "attribute_ruler")
_model: Any = None
_model_lock = threading.Lock()  # one load per process; and spaCy's Language is not documented thread-safe
_unavailable: str | None = None


def _borrowed_model() -> Any:
    """artifacts' tagger pipeline when this process has loaded it with its parser (never imports it)."""
    services = sys.modules.get("artifacts.services")
    tagger = getattr(services, "_tagger", None) if services else None
    if tagger is not None and getattr(tagger, "parses", False):
        return tagger.nlp
    return None


def _load_model() -> Any:
    from artifacts.phenomenon_tagger import MODEL_PACKAGES, choose_model_package, import_spacy, installed_model_packages

    spacy = import_spacy()

    name = choose_model_package(installed_model_packages(MODEL_PACKAGES), MODEL_PACKAGES)
    return spacy.load(name, exclude=list(_UNUSED))


def sentence_model() -> Any:
    """The process's parsing pipeline (None, logged once, when spaCy or its model is missing: the
    other writing rules still hold, and a missing model must not refuse every writer)."""
    global _model, _unavailable
    if _model is not None:
        return _model
    borrowed = _borrowed_model()
    if borrowed is not None:
        return borrowed
    with _model_lock:
        if _model is None and _unavailable is None:
            try:
                _model = _load_model()
            except Exception as error:  # ImportError, TaggerUnavailable, OSError from spacy.load
                _unavailable = str(error)
                logger.error("The sentence-shape check is off: no spaCy pipeline (%s)", error)
    return _model


def load_sentence_model() -> None:
    """Load the parser now (a web server's start) instead of on the first submit."""
    sentence_model()


def _prepared(text: str) -> str:
    """Whitespace runs as one space (a parse reads a double space as a word); characters UTF-8
    cannot hold (lone surrogates, which crash spaCy's tokenizer) as "?"."""
    return " ".join(text.split()).encode("utf-8", "replace").decode("utf-8")


def _parse(nlp: Any, text: str) -> Any:
    with _model_lock:
        return nlp(_prepared(text))


def sentence_shape(text: str) -> Shape | None:
    """The shape of one hypothesis; None when no model can be loaded here."""
    nlp = sentence_model()
    if nlp is None:
        return None
    return Shape(doc_faults(_parse(nlp, text)))


def shapes(texts: Iterable[str], batch_size: int = 256) -> list[Shape]:
    """The shapes of many texts in one `nlp.pipe` pass (bench/sentence_check.py)."""
    nlp = sentence_model()
    if nlp is None:
        raise RuntimeError(f"no spaCy pipeline: {_unavailable}")
    return [Shape(doc_faults(doc)) for doc in nlp.pipe(map(_prepared, texts), batch_size=batch_size)]


class ShapeProblem(str):
    """The message of a hypothesis refused for its shape: a `str`, so every caller shows it as any
    writing rule's message, and still known for what it is where the refusal is recorded as a
    session's evidence (collection/shape_holds.py)."""


class ShapeWarning(ShapeProblem):
    """A shape refusal the writer may override by sending the same sentence again: recorded as a
    shape flag like a refusal."""


def shape_problem(
    text: str, rules: ShapeRules = ShapeRules(), *, confirmed: bool | None = False
) -> ShapeProblem | None:
    """Why `text` does not read as a sentence (a message naming what is missing), or None.
    `confirmed`: the writer was warned about this sentence already and sent it again (the warning
    is overridden); None when no warning can be recorded (outside a study session): warnings pass."""
    if rules.check == SHAPE_OFF:
        return None
    shape = sentence_shape(text)
    found = verdict(shape, rules)
    if found is None or shape is None or (found == WARNED and confirmed is not False):
        return None
    reasons = [SHAPE_FAULTS[name][1] for name in shape.faults]
    listed = reasons[0] if len(reasons) == 1 else ", ".join(reasons[:-1]) + " and " + reasons[-1]
    if found == WARNED:
        return ShapeWarning(
            f"This may not read as an English sentence: {listed}. If it says what you mean, send it again "
            "unchanged; else please write a whole sentence such as 'A man is riding a bike down the street.'"
        )
    return ShapeProblem(
        f"This does not read as an English sentence: {listed}. "
        "Please write a whole sentence such as 'A man is riding a bike down the street.'"
    )


# --- a session's refusals as evidence (collection/shape_holds.py holds the code) ----------------

# An honest writer's hypothesis is refused or warned 0.3% of the time, a salad three times in four. A session
# is held when its refusals are at least this many and this share of what it sent (bench/shape_holds.py:
# no simulated SNLI dev session of 1 to 50 tasks is held).
SHAPE_HOLD_MIN_REFUSALS = 3
SHAPE_HOLD_SHARE = 0.2


def held_for_shape(refused: int, sent: int) -> bool:
    """Whether a session that sent `sent` hypotheses, `refused` of them refused for their shape,
    wrote salad rather than slipped: a few refusals at least, and a share no honest writer reaches."""
    return refused >= SHAPE_HOLD_MIN_REFUSALS and refused >= SHAPE_HOLD_SHARE * sent
