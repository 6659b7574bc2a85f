"""Penn-style constituency trees (read from their bracketed text) and MultiNLI's binary parses.

MultiNLI and SNLI ship two parses a sentence, from the Stanford PCFG parser: ``sentence1_parse``
(``(ROOT (S (NP (DT A) (NN man)) (VP (VBZ sleeps)) (. .)))``) and ``sentence1_binary_parse``
(``( ( A man ) ( sleeps . ) )``), the same tree binarised around its heads. Pairs written on the
platform have neither; artifacts.dependency_trees builds the first from spaCy's dependency parse,
and ``binary_parse`` here derives the second from it. Pure Python.
"""

from dataclasses import dataclass, field
from typing import Any

# --- trees -------------------------------------------------------------------------------------


@dataclass(slots=True)
class Tree:
    """A constituent: a label and its children; a preterminal has one ``str`` child, the word."""

    label: str
    # Trees, or one word (a str) under a preterminal: Any, since `is_preterminal` cannot narrow the list.
    children: list[Any] = field(default_factory=list)

    @property
    def is_preterminal(self) -> bool:
        children = self.children
        return len(children) == 1 and children[0].__class__ is str

    def leaves(self) -> list[str]:
        if self.is_preterminal:
            return [self.children[0]]
        return [leaf for child in self.children for leaf in child.leaves()]

    def preterminals(self) -> list["Tree"]:
        if self.is_preterminal:
            return [self]
        return [node for child in self.children for node in child.preterminals()]

    def __str__(self) -> str:
        if self.is_preterminal:
            return f"({self.label} {self.children[0]})"
        return f"({self.label} {' '.join(str(child) for child in self.children)})"


def parse_tree(text: str) -> Tree:
    """The Tree of a Penn bracketing such as MultiNLI's ``sentence1_parse``; ValueError if malformed."""
    tokens = text.replace("(", " ( ").replace(")", " ) ").split()
    if not tokens:
        raise ValueError("empty bracketing")
    position = 0

    def read() -> Tree:
        nonlocal position
        if tokens[position] != "(":
            raise ValueError(f"expected '(' at token {position} of {text!r}")
        position += 1
        label = tokens[position] if tokens[position] not in "()" else ""
        if label:
            position += 1
        children: list[Tree | str] = []
        while tokens[position] != ")":
            if tokens[position] == "(":
                children.append(read())
            else:
                children.append(tokens[position])
                position += 1
        position += 1
        return Tree(label, children)

    try:
        tree = read()
    except IndexError as error:
        raise ValueError(f"unbalanced bracketing: {text!r}") from error
    if position != len(tokens):
        raise ValueError(f"text after the tree in {text!r}")
    return tree


# --- binary parses -----------------------------------------------------------------------------

# Head rules of Stanford's ModCollinsHeadFinder (Collins 1999, as CoreNLP modifies them): per
# phrase label, searches in order, each (direction, labels); "left" takes the first child from
# the left whose label is in the set, "leftdis" the first child from the left in any of them.
_HEAD_RULES = {
    "ADJP": [
        ("left", "$"),
        ("rightdis", "NNS NN JJ QP VBN VBG"),
        ("left", "ADJP"),
        ("rightdis", "JJP JJR JJS DT RB RBR CD QP"),
        ("left", "ADVP"),
        ("left", ""),
    ],
    "JJP": [("left", "NNS NN $ QP JJ VBN VBG ADJP JJP JJR NP JJS DT FW RBR RBS SBAR RB")],
    "ADVP": [
        ("left", "ADVP IN"),
        ("rightdis", "RB RBR RBS JJ JJR JJS"),
        ("rightdis", "RP DT NN CD NP VBN NNP CC FW NNS ADJP NN"),
    ],
    "CONJP": [("right", "CC RB IN")],
    "FRAG": [("right", "")],
    "INTJ": [("left", "")],
    "LST": [("right", "LS :")],
    "NAC": [("left", "NN NNS NML NNP NNPS NP NAC EX $ CD QP PRP VBG JJ JJS JJR ADJP JJP FW")],
    "NX": [("right", "NP NX")],
    "PP": [("right", "IN TO VBG VBN RP FW JJ SYM"), ("left", "PP")],
    "PRN": [("left", "VP NP PP SQ S SINV SBAR ADJP JJP ADVP INTJ WHNP NAC VBP JJ NN NNP")],
    "PRT": [("right", "RP")],
    "QP": [("left", "$ IN NNS NN JJ CD PDT DT RB NCD QP JJR JJS")],
    "RRC": [("left", "RRC"), ("right", "VP ADJP JJP NP PP ADVP")],
    "S": [("left", "TO VP S FRAG SBAR ADJP JJP UCP NP P")],
    "SBAR": [("left", "WHNP WHPP WHADVP WHADJP IN DT S SQ SINV SBAR FRAG")],
    "SBARQ": [("left", "SQ S SINV SBARQ FRAG SBAR")],
    "SINV": [("left", "VBZ VBD VBP VB MD VBN VP S SINV ADJP JJP NP")],
    "SQ": [("left", "VBZ VBD VBP VB MD AUX AUXG VP SQ")],
    "UCP": [("right", "")],
    "VP": [("left", "TO VBD VBN MD VBZ VB VBG VBP VP AUX AUXG ADJP JJP NN NNS JJ NP NNP")],
    "WHADJP": [("left", "WRB WHADVP RB JJ ADJP JJP JJR")],
    "WHADVP": [("right", "WRB WHADVP")],
    "WHNP": [("left", "WDT WP WP$ WHADJP WHPP WHNP")],
    "WHPP": [("right", "IN TO FW")],
    "X": [("right", "S VP ADJP JJP NP SBAR PP X")],
    "NP": [
        ("rightdis", "NN NNP NNPS NNS NML NX POS JJR"),
        ("left", "NP PRP"),
        ("rightdis", "$ ADJP JJP PRN FW"),
        ("right", "CD"),
        ("rightdis", "JJ JJS RB QP DT WDT RBR ADVP"),
    ],
    "NML": [
        ("rightdis", "NN NNP NNPS NNS NML NX POS JJR"),
        ("left", "NP PRP"),
        ("rightdis", "$ ADJP JJP PRN"),
        ("right", "CD"),
        ("rightdis", "JJ JJS RB QP DT WDT RBR ADVP"),
    ],
    "POSSP": [("right", "POS")],
    "ROOT": [("left", "S SQ SINV SBAR FRAG")],
    "TYPO": [("left", "NN NP NML NNP NNPS TO VBD VBN MD VBZ VB VBG VBP VP ADJP JJP FRAG")],
    "ADV": [("right", "RB RBR RBS FW ADVP TO CD JJR JJ IN NP NML JJS NN")],
    "EDITED": [("left", "")],
    "VCD": [("left", "VV VA VE")],
    "META": [("left", "")],
}
_PUNCTUATION_TAGS = frozenset({"''", "``", ".", ":", ",", "-LRB-", "-RRB-"})


def head_child(tree: Tree) -> int:
    """Index of the head child of ``tree`` by the ModCollins rules, with CoreNLP's coordination fix:
    a head right after a CC gives way to the conjunct before the CC ("uniforms and helmets")."""
    labels = [child.label for child in tree.children]
    rules = _SPLIT_HEAD_RULES.get(tree.label.split("-")[0], _DEFAULT_HEAD_RULES)
    head = _match_rules(labels, rules)
    # Unless the conjunct's place holds punctuation ("red , white , and blue"): CoreNLP's loop
    # that means to step over it never moves on, and the head stays.
    if head >= 2 and labels[head - 1] in ("CC", "CONJP") and labels[head - 2] not in _PUNCTUATION_TAGS:
        head -= 2
    return head


# The rules as _match_rules reads them: (from the left?, any of them?, labels), split once.
_SPLIT_HEAD_RULES = {
    label: [
        (direction.startswith("left"), direction.endswith("dis"), tuple(wanted.split())) for direction, wanted in rules
    ]
    for label, rules in _HEAD_RULES.items()
}
_DEFAULT_HEAD_RULES: list[tuple[bool, bool, tuple[str, ...]]] = [(True, False, ())]


def _match_rules(labels: list[str], rules: list[tuple[bool, bool, tuple[str, ...]]]) -> int:
    count = len(labels)
    for from_left, any_of, wanted in rules:
        order = range(count) if from_left else range(count - 1, -1, -1)
        if not wanted:
            return order[0]
        if any_of:
            for i in order:
                if labels[i] in wanted:
                    return i
        else:
            for label in wanted:
                if label in labels:  # the search below finds it
                    for i in order:
                        if labels[i] == label:
                            return i
    # Nothing matched: the child at the end the last rule searches from.
    return 0 if rules[-1][0] else count - 1


def binary_parse(tree: Tree) -> str:
    """MultiNLI's ``sentence*_binary_parse`` of a Penn tree: words only, unary chains collapsed, a
    node of more than two children binarised around its head (its right sisters joined first,
    then its left ones), e.g. ``( ( Two women ) ( ( are ... ) . ) )``."""
    return _binary_text(_binarised(tree))


# A binarised constituent: a word, or a (left, right) pair of them.
Binarised = str | tuple["Binarised", "Binarised"]


def _binarised(tree: Tree) -> Binarised:
    """A word, or a (left, right) pair of binarised constituents."""
    while not tree.is_preterminal and len(tree.children) == 1:
        tree = tree.children[0]
    if tree.is_preterminal:
        word: str = tree.children[0]
        return word
    parts = [_binarised(child) for child in tree.children]
    head = head_child(tree)
    node = parts[head]
    for right in parts[head + 1 :]:
        node = (node, right)
    for left in reversed(parts[:head]):
        node = (left, node)
    return node


def _binary_text(node: Binarised) -> str:
    if isinstance(node, str):
        return node
    return f"( {_binary_text(node[0])} {_binary_text(node[1])} )"
