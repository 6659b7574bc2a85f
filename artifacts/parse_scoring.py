"""evalb-style labelled bracket scores of one constituency tree against another.

A bracket is (label, start, end) for every phrase node but ROOT and the preterminals, as evalb's
COLLINS.prm counts them: punctuation (, : `` '' .) is left out of the spans, so a comma inside or
outside a phrase does not decide a match, and ADVP and PRT count as one label. Spans are measured
in characters of the sentence with spaces removed, not in tokens, so two trees of the same
sentence compare even when their tokenizers split it differently ("don't" as do|n't or don|'t).
Pure Python; the trees are ``artifacts.trees.Tree``.
"""

from collections import Counter
from dataclasses import dataclass

from .trees import Tree

PUNCTUATION_TAGS = frozenset({",", ":", "``", "''", ".", "-NONE-"})
EQUIVALENT_LABELS = {"PRT": "ADVP"}
_WORD_FORMS = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}", "``": '"', "''": '"'}


def brackets(tree: Tree) -> Counter[tuple[str, int, int]]:
    """Counter of (label, first character, last character + 1) of the tree's phrases."""
    found: Counter[tuple[str, int, int]] = Counter()
    offset = 0

    def walk(node: Tree) -> tuple[int, int] | None:
        nonlocal offset
        if node.is_preterminal:
            word: str = _WORD_FORMS.get(node.children[0], node.children[0])
            start = offset
            offset += len(word.replace("_", ""))
            if node.label in PUNCTUATION_TAGS:
                return None
            return start, offset
        spans = [span for span in (walk(child) for child in node.children) if span is not None]
        if not spans:
            return None
        span = (spans[0][0], spans[-1][1])
        if node.label != "ROOT":
            label = node.label.split("-")[0] or node.label
            found[(EQUIVALENT_LABELS.get(label, label), *span)] += 1
        return span

    walk(tree)
    return found


@dataclass
class BracketScore:
    """Totals over sentences; precision, recall and F1 in percent, evalb's way (summed counts)."""

    matched: int = 0
    guessed: int = 0
    gold: int = 0
    sentences: int = 0
    identical: int = 0

    def add(self, guess: Tree, gold: Tree) -> "BracketScore":
        guessed, wanted = brackets(guess), brackets(gold)
        self.matched += sum((guessed & wanted).values())
        self.guessed += sum(guessed.values())
        self.gold += sum(wanted.values())
        self.sentences += 1
        self.identical += guessed == wanted
        return self

    @property
    def precision(self) -> float:
        return 100.0 * self.matched / self.guessed if self.guessed else 0.0

    @property
    def recall(self) -> float:
        return 100.0 * self.matched / self.gold if self.gold else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    @property
    def identical_share(self) -> float:
        """Percent of sentences whose labelled brackets are exactly the gold ones."""
        return 100.0 * self.identical / self.sentences if self.sentences else 0.0


def right_branching(tree: Tree) -> Tree:
    """The baseline: the same words and tags, every phrase the rest of the sentence from one word
    on, labelled by that word's tag class (NP from a determiner, adjective or noun, VP from a
    verb, PP from a preposition, ADVP from an adverb, S otherwise), under an S."""
    leaves = list(tree.preterminals())
    node: Tree | None = None
    for leaf in reversed(leaves):
        node = leaf if node is None else Tree(_phrase_of_tag(leaf.label), [leaf, node])
    return Tree("ROOT", [Tree("S", [node])] if node is not None else [])


def _phrase_of_tag(tag: str) -> str:
    if tag.startswith("NN") or tag in ("DT", "JJ", "JJR", "JJS", "CD", "PRP", "PRP$", "PDT"):
        return "NP"
    if tag.startswith("VB") or tag in ("MD", "TO"):
        return "VP"
    if tag == "IN":
        return "PP"
    if tag.startswith("RB"):
        return "ADVP"
    return "S"
