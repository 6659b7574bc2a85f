"""MultiNLI's linguistic phenomenon tags (Williams et al., 2018, §4, Tables 6-7) for NLI pairs.

A pair gets a tag when its premise or its hypothesis shows the phenomenon; "tense_match" needs
both. PTB-based tags read the Penn Treebank tags of spaCy's English tagger (``token.tag_``);
keyword-based tags look words up in ``artifacts.phenomena_words``.

Pure Python: no spaCy, no Django, no database. Everything here works on plain ``(word, PTB tag)``
tuples, so it can be tested and reused without a model; artifacts.phenomenon_tagger runs spaCy's
tagger and hands its tokens to these rules.
"""

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import chain

from artifacts import phenomena_words as words

PTB = "ptb"
KEYWORD = "keyword"


@dataclass(frozen=True)
class Phenomenon:
    name: str  # stable identifier, stored by the database side
    label: str  # the row name in the paper's Table 6
    kind: str  # PTB or KEYWORD, as Table 6 marks it
    description: str


# In the order of the paper's Table 6.
PHENOMENA = (
    Phenomenon("pronouns", "Pronouns (PTB)", PTB, "a personal or possessive pronoun (PRP, PRP$)"),
    Phenomenon(
        "quantifiers", "Quantifiers", KEYWORD, "a single word with quantificational force: all, some, many, few, two..."
    ),
    Phenomenon("modals", "Modals (PTB)", PTB, "a modal verb (MD): can, could, must, should, will..."),
    Phenomenon(
        "negation",
        "Negation (PTB)",
        PTB,
        "not/n't (RB on PTB tokens), never, or a negative word: no, nobody, nothing...",
    ),
    Phenomenon(
        "wh_words",
        "'Wh' Words (PTB)",
        PTB,
        "a wh-word (WDT, WP, WP$, WRB): what, which, who, whose, when, where, why, how",
    ),
    Phenomenon(
        "belief_verbs", "Belief Verbs", KEYWORD, "a verb of mental state: know/knew, believe, think/thought, suppose..."
    ),
    Phenomenon(
        "time_terms",
        "Time Terms",
        KEYWORD,
        "a word of abstract time: then, today, now, before..., a month or a weekday",
    ),
    Phenomenon(
        "conversational_pivots",
        "Conversational Pivots",
        KEYWORD,
        "a discourse connective: yet, but, thus, despite, however...",
    ),
    Phenomenon(
        "presupposition_triggers",
        "Presupposition Triggers",
        KEYWORD,
        "a trigger word: again, too, anymore, still, even, stop, regret...",
    ),
    Phenomenon(
        "comparatives_superlatives",
        "Comparatives/Superlatives (PTB)",
        PTB,
        "a comparative or superlative adjective or adverb (JJR, JJS, RBR, RBS)",
    ),
    Phenomenon("conditionals", "Conditionals", KEYWORD, "the word if"),
    Phenomenon(
        "tense_match",
        "Tense Match (PTB)",
        PTB,
        "premise and hypothesis have the same finite tenses (VBD past; VBP, VBZ present; will/shall future)",
    ),
    Phenomenon("interjections", "Interjections (PTB)", PTB, "an interjection (UH): oh, yes, well, please..."),
    Phenomenon(
        "long_sentence",
        ">20 Words",
        KEYWORD,
        f"a premise or hypothesis of more than {words.LONG_SENTENCE_MIN_WORDS - 1} words",
    ),
    Phenomenon("existentials", "Existentials (PTB)", PTB, "existential there (EX): there is, there are"),
)
PHENOMENON_NAMES = tuple(phenomenon.name for phenomenon in PHENOMENA)
TENSE_MATCH = "tense_match"

# Where a pair's tag was found, for analyses that care which sentence carried it.
PREMISE, HYPOTHESIS, BOTH = "premise", "hypothesis", "both"

Token = tuple[str, str]  # (text, PTB tag)


# --- sentences ---------------------------------------------------------------------------------

_TYPOGRAPHIC_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})
_WORD = re.compile(r"[^\W_]")  # a letter or a digit


def normalise_text(text: str) -> str:
    """Typographic apostrophes as ASCII ones: the tagger mis-tags "can\u2019t" (ca/MD n\u2019t/NN)."""
    return text.translate(_TYPOGRAPHIC_APOSTROPHES)


def reader_word_count(text: str) -> int:
    """Words as a reader counts them: whitespace-separated chunks holding a letter or a digit.

    Independent of the tokenizer, so "didn't" is one word and a lone dash or "..." is none.
    """
    return sum(1 for chunk in text.split() if _WORD.search(chunk))


def is_long(text: str) -> bool:
    return reader_word_count(text) >= words.LONG_SENTENCE_MIN_WORDS


def sentence_tenses(tokens: Sequence[Token]) -> frozenset[str]:
    """The finite tenses a sentence shows: a subset of {"past", "present", "future"}.

    PTB marks tense only on finite verbs (VBD, VBP, VBZ); "will"/"shall" (MD) stand in for the
    future PTB has no tag for. Fragments such as "A man sitting on a bench." have none.
    """
    tenses = set()
    for text, tag in tokens:
        if tag in words.TENSE_OF_TAG:
            tenses.add(words.TENSE_OF_TAG[tag])
        elif tag == "MD" and _key(text) in words.FUTURE_MODALS:
            tenses.add("future")
    return frozenset(tenses)


def tenses_match(premise_tenses: frozenset[str], hypothesis_tenses: frozenset[str]) -> bool:
    """Same non-empty set of finite tenses: "The man ate." / "He was hungry." match; a fragment never does."""
    return bool(premise_tenses) and premise_tenses == hypothesis_tenses


def _key(text: str) -> str:
    return normalise_text(text).lower()


def _token_phenomena(text: str, tag: str) -> list[str]:
    """The sentence-level tags one (word, PTB tag) token gives, in no particular order."""
    word = _key(text)
    is_verb = tag in words.VERB_TAGS
    found = []
    if tag in words.PRONOUN_TAGS:
        found.append("pronouns")
    if tag in words.MODAL_TAGS:
        found.append("modals")
    if word in words.NEGATION_WORDS:
        # Not tag-gated: these words are negative whatever their tag, and the tagger mis-tags
        # short tokens like spaCy's "nt" (of "dont") often enough to lose real negations.
        found.append("negation")
    if tag in words.WH_TAGS and word in words.WH_WORD_FORMS:
        found.append("wh_words")
    if tag in words.COMPARATIVE_SUPERLATIVE_TAGS:
        found.append("comparatives_superlatives")
    if tag in words.INTERJECTION_TAGS:
        found.append("interjections")
    if tag in words.EXISTENTIAL_TAGS:
        found.append("existentials")
    if word in words.QUANTIFIERS:
        found.append("quantifiers")
    if is_verb and word in words.BELIEF_VERBS:
        found.append("belief_verbs")
    if _is_time_term(word, tag):
        found.append("time_terms")
    if word in words.CONVERSATIONAL_PIVOTS:
        found.append("conversational_pivots")
    if word in words.PRESUPPOSITION_PARTICLES or (is_verb and word in words.PRESUPPOSITION_VERBS):
        found.append("presupposition_triggers")
    if word in words.CONDITIONALS:
        found.append("conditionals")
    return found


def _is_time_term(word: str, tag: str) -> bool:
    if word in words.AMBIGUOUS_MONTHS:
        return tag == "NNP"
    return word in words.TIME_TERMS


@dataclass(frozen=True)
class SentencePhenomena:
    """What one sentence contributes to its pair's tags."""

    tags: frozenset[str]  # sentence-level tag names (every tag but tense_match)
    tenses: frozenset[str]  # finite tenses, for tense_match


def sentence_phenomena(tokens: Sequence[Token], text: str | None = None) -> SentencePhenomena:
    """Tags of one sentence from its (word, PTB tag) tokens; ``text`` (default: the tokens joined)
    decides long_sentence. Whitespace tokens (spaCy's _SP) are the caller's to drop."""
    tags = set(chain.from_iterable(_token_phenomena(word, tag) for word, tag in tokens))
    if is_long(text if text is not None else " ".join(word for word, _ in tokens)):
        tags.add("long_sentence")
    return SentencePhenomena(frozenset(tags), sentence_tenses(tokens))


# --- pairs -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairPhenomena:
    """A pair's tags, and for each tag which sentence had it (PREMISE, HYPOTHESIS or BOTH)."""

    where: Mapping[str, str]

    @property
    def tags(self) -> frozenset[str]:
        return frozenset(self.where)


def pair_phenomena(premise: SentencePhenomena, hypothesis: SentencePhenomena) -> PairPhenomena:
    """Combines two sentences as MultiNLI does: a tag of either sentence tags the pair."""
    where = {}
    for name in PHENOMENON_NAMES:
        in_premise, in_hypothesis = name in premise.tags, name in hypothesis.tags
        if in_premise or in_hypothesis:
            where[name] = BOTH if in_premise and in_hypothesis else PREMISE if in_premise else HYPOTHESIS
    if tenses_match(premise.tenses, hypothesis.tenses):
        where[TENSE_MATCH] = BOTH
    return PairPhenomena(where)


@dataclass(frozen=True)
class TaggedPair:
    """A pair's tags and, from the same spaCy pass, each sentence's (parse, binary_parse)."""

    phenomena: PairPhenomena
    premise_parses: tuple[str, str]  # (parse, binary_parse)
    hypothesis_parses: tuple[str, str]
