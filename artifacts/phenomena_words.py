"""Word lists behind the phenomenon tags of MultiNLI §4 (Williams et al., 2018), in one place.

The paper publishes a handful of examples per category, not its lists. Every list below says
where it comes from: the paper's own examples first, then the words we added from standard
descriptions of the category (the references the paper itself cites, and ordinary English
grammar). Everything is lower case; tokens are compared after lower-casing and turning typographic
apostrophes into ASCII ones, so PTB-style tokens such as "n't" and "'ll" appear as spaCy writes them.
"""

from collections.abc import Iterable


def _forms(*groups: dict[str, Iterable[str]]) -> frozenset[str]:
    """Flattens {lemma: its inflected forms} groups into one frozenset of word forms."""
    return frozenset(form for group in groups for forms in group.values() for form in forms)


# --- Penn-Treebank-based tags ------------------------------------------------------------------

# PTB tags (Marcus et al., 1993; Santorini's tagging guidelines) each PTB-based tag looks for.
PRONOUN_TAGS = frozenset({"PRP", "PRP$"})  # personal (incl. reflexive) and possessive pronouns
MODAL_TAGS = frozenset({"MD"})
COMPARATIVE_SUPERLATIVE_TAGS = frozenset({"JJR", "JJS", "RBR", "RBS"})
INTERJECTION_TAGS = frozenset({"UH"})
EXISTENTIAL_TAGS = frozenset({"EX"})  # the "there" of "there is"
WH_TAGS = frozenset({"WDT", "WP", "WP$", "WRB"})
VERB_TAGS = frozenset({"VB", "VBD", "VBG", "VBN", "VBP", "VBZ"})

# Finite verb tags and the tense they mark; PTB has no future tag (see FUTURE_MODALS).
TENSE_OF_TAG = {"VBD": "past", "VBP": "present", "VBZ": "present"}

# Our addition: PTB tags "will" as a plain modal (MD). Without this, two sentences in the future
# ("will eat" / "will be eating") would have no tense at all and could never match.
FUTURE_MODALS = frozenset({"will", "shall", "'ll", "wo"})  # "wo" is spaCy's first half of "won't"

# PTB has no negation tag; it does split "didn't" into did + n't and tag not/n't as RB. These are
# those tokens plus the negative words of ordinary grammar (Huddleston & Pullum 2002, ch. 9).
# "nt" is spaCy's token for apostrophe-less "dont", "isnt", "cant".
NEGATION_WORDS = frozenset(
    {"not", "n't", "nt", "never", "no", "nobody", "nothing", "none", "nowhere", "neither", "nor", "noone", "cannot"}
)

# PTB tags "that" as WDT when it introduces a relative clause; it is no wh-word, so wh-word tags
# count only on words spelled like one.
WH_WORD_FORMS = frozenset(
    {
        "what",
        "whatever",
        "which",
        "whichever",
        "who",
        "whoever",
        "whom",
        "whomever",
        "whose",
        "when",
        "whenever",
        "where",
        "wherever",
        "whereby",
        "why",
        "how",
        "however",
    }
)


# --- keyword-based tags ------------------------------------------------------------------------

# Quantifiers: "single words with quantificational force (Heim and Kratzer 1998; Szabolcsi 2010),
# e.g., many, all, few, some" (§4). Added: the other determiner quantifiers of generalized
# quantifier theory, including cardinal numerals from two up (Barwise & Cooper 1981). "one" and
# "a" are left out: they are mostly pronoun and article, and would tag nearly every pair.
QUANTIFIERS = frozenset(
    {
        "many",
        "all",
        "few",
        "some",  # the paper's examples
        "every",
        "each",
        "any",
        "no",
        "none",
        "both",
        "either",
        "neither",
        "several",
        "most",
        "much",
        "fewer",
        "numerous",
        "various",
        "multiple",
        "enough",
        "half",
        "everyone",
        "everybody",
        "everything",
        "someone",
        "somebody",
        "something",
        "anyone",
        "anybody",
        "anything",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "twenty",
        "dozen",
        "dozens",
        "hundred",
        "hundreds",
        "thousand",
        "thousands",
        "million",
        "millions",
    }
)

# Belief verbs: "sentence-embedding verbs that denote mental states, e.g., know, believe, think,
# contemplate etc., including irregular past tense forms" (§4). Added: the usual doxastic and
# epistemic attitude verbs. Counted only on tokens tagged as verbs (VERB_TAGS), because "thought",
# "doubt", "guess" and "feeling" are as often nouns.
BELIEF_VERBS = _forms(
    {  # the paper's examples
        "know": ("know", "knows", "knew", "known", "knowing"),
        "believe": ("believe", "believes", "believed", "believing"),
        "think": ("think", "thinks", "thought", "thinking"),
        "contemplate": ("contemplate", "contemplates", "contemplated", "contemplating"),
    },
    {  # irregular pasts
        "understand": ("understand", "understands", "understood", "understanding"),
        "feel": ("feel", "feels", "felt", "feeling"),
        "forget": ("forget", "forgets", "forgot", "forgotten", "forgetting"),
        "dream": ("dream", "dreams", "dreamt", "dreamed", "dreaming"),
    },
    {  # regular
        "suppose": ("suppose", "supposes", "supposed", "supposing"),
        "assume": ("assume", "assumes", "assumed", "assuming"),
        "presume": ("presume", "presumes", "presumed", "presuming"),
        "guess": ("guess", "guesses", "guessed", "guessing"),
        "doubt": ("doubt", "doubts", "doubted", "doubting"),
        "suspect": ("suspect", "suspects", "suspected", "suspecting"),
        "imagine": ("imagine", "imagines", "imagined", "imagining"),
        "realize": ("realize", "realizes", "realized", "realizing", "realise", "realises", "realised", "realising"),
        "consider": ("consider", "considers", "considered", "considering"),
        "reckon": ("reckon", "reckons", "reckoned", "reckoning"),
        "wonder": ("wonder", "wonders", "wondered", "wondering"),
        "expect": ("expect", "expects", "expected", "expecting"),
        "remember": ("remember", "remembers", "remembered", "remembering"),
        "recall": ("recall", "recalls", "recalled", "recalling"),
        "conclude": ("conclude", "concludes", "concluded", "concluding"),
        "deem": ("deem", "deems", "deemed", "deeming"),
        "trust": ("trust", "trusts", "trusted", "trusting"),
    },
)

# Time terms: "single words that are related to abstract temporal interpretation, e.g., then,
# today, as well as month names and days of the week e.g., January, Wednesday" (§4). Added:
# deictic, aspectual and frequency adverbs, and the temporal prepositions and connectives
# (before, while, when...: they relate the times of two events). Concrete time nouns (day, night,
# morning, year) are left out as not abstract.
TIME_ADVERBS = frozenset(
    {
        "then",
        "today",  # the paper's examples
        "now",
        "tonight",
        "tomorrow",
        "yesterday",
        "soon",
        "later",
        "earlier",
        "recently",
        "currently",
        "already",
        "ago",
        "once",
        "meanwhile",
        "afterwards",
        "afterward",
        "beforehand",
        "eventually",
        "nowadays",
        "lately",
        "formerly",
        "previously",
        "presently",
        "shortly",
        "always",
        "sometimes",
        "often",
        "usually",
        "seldom",
        "rarely",
        "daily",
        "weekly",
        "monthly",
        "yearly",
        "annually",
    }
)
TEMPORAL_CONNECTIVES = frozenset({"before", "after", "until", "till", "since", "during", "while", "when", "whenever"})
MONTHS = frozenset(
    {
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    }
)
# "may", "march" and "august" are also a modal, a verb and an adjective: as months they must be
# proper nouns (NNP).
AMBIGUOUS_MONTHS = frozenset({"may", "march", "august"})
WEEKDAYS = frozenset({"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "weekend"})
TIME_TERMS = TIME_ADVERBS | TEMPORAL_CONNECTIVES | MONTHS | WEEKDAYS

# Conversational pivots: "words facilitating discourse cohesion, e.g., yet, but, thus, despite,
# however" (§4). Added: the contrastive, concessive and consequential connectives of Halliday &
# Hasan (1976, ch. 5). "so" and "and" are left out: far too frequent and mostly not pivots.
CONVERSATIONAL_PIVOTS = frozenset(
    {
        "yet",
        "but",
        "thus",
        "despite",
        "however",  # the paper's examples
        "although",
        "though",
        "nevertheless",
        "nonetheless",
        "therefore",
        "hence",
        "moreover",
        "furthermore",
        "besides",
        "anyway",
        "anyhow",
        "instead",
        "otherwise",
        "whereas",
        "consequently",
        "accordingly",
        "regardless",
        "notwithstanding",
    }
)

# Presupposition triggers: "single words that trigger presuppositions ... e.g. again, too,
# anymore" (§4), leaving out very frequent ones such as "the" (footnote 2). Added from the
# trigger classes of Levinson (1983, §4.2) and Schlenker (2016): iteratives, additive and focus
# particles, and change-of-state and factive verbs (the verbs counted only when tagged as verbs).
# "yet" and "still" sit in one list each (pivots, triggers) so one word does not make two tags.
PRESUPPOSITION_PARTICLES = frozenset(
    {
        "again",
        "too",
        "anymore",  # the paper's examples
        "also",
        "still",
        "even",
        "only",
        "another",
        "either",
        "anew",
    }
)
PRESUPPOSITION_VERBS = _forms(
    {  # change of state
        "stop": ("stop", "stops", "stopped", "stopping"),
        "start": ("start", "starts", "started", "starting"),
        "begin": ("begin", "begins", "began", "begun", "beginning"),
        "continue": ("continue", "continues", "continued", "continuing"),
        "quit": ("quit", "quits", "quitting"),
        "resume": ("resume", "resumes", "resumed", "resuming"),
        "cease": ("cease", "ceases", "ceased", "ceasing"),
    },
    {  # factive
        "regret": ("regret", "regrets", "regretted", "regretting"),
        "realize": ("realize", "realizes", "realized", "realizing", "realise", "realises", "realised", "realising"),
        "discover": ("discover", "discovers", "discovered", "discovering"),
        "notice": ("notice", "notices", "noticed", "noticing"),
    },
)

# Conditionals: "the word if" (§4), the paper's whole list.
CONDITIONALS = frozenset({"if"})

# Long sentences: "sentences of over 20 words" (§4, Table 6 ">20 Words").
LONG_SENTENCE_MIN_WORDS = 21
