"""The dependency-to-Penn converter as it stood before it was made faster (artifacts/trees.py at
2019540), kept unchanged as the reference the fast one must agree with, tree for tree
(tests/artifacts/test_trees.py runs both over SNLI dev). Not used by the platform.

Penn-style constituency trees from spaCy's dependency parse, and MultiNLI's binary parses.

MultiNLI and SNLI ship two parses a sentence, from the Stanford PCFG parser: ``sentence1_parse``
(``(ROOT (S (NP (DT A) (NN man)) (VP (VBZ sleeps)) (. .)))``) and ``sentence1_binary_parse``
(``( ( A man ) ( sleeps . ) )``), the same tree binarised around its heads. Pairs written on the
platform have neither, so the tagging pass, which runs spaCy's tagger anyway, also runs its
dependency parser and turns the dependency tree into a constituency tree with the rules below:
each word projects a phrase from its Penn Treebank tag (nouns NP, verbs VP and S, adjectives ADJP,
adverbs ADVP, prepositions PP, ...), its dependents go inside it in word order, and the dependency
label says how (a subject goes beside the VP inside S, an auxiliary opens a VP around the rest,
a ``mark`` makes an SBAR, a post-modifier of a noun nests the NP, a ``conj`` coordinates).
``docs/parses.md`` says how the result differs from the Stanford parser's and gives the figures.

Pure Python: the converter reads ``(text, tag, dep, head)`` tuples (``DepToken``), so it runs and
is tested without spaCy; ``tokens_of(sentence)`` reads them off a spaCy sentence.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field

# --- trees -------------------------------------------------------------------------------------


@dataclass
class Tree:
    """A constituent: a label and its children; a preterminal has one ``str`` child, the word."""

    label: str
    children: list = field(default_factory=list)

    @property
    def is_preterminal(self):
        children = self.children
        return len(children) == 1 and children[0].__class__ is str

    def leaves(self):
        if self.is_preterminal:
            return [self.children[0]]
        return [leaf for child in self.children for leaf in child.leaves()]

    def preterminals(self):
        if self.is_preterminal:
            return [self]
        return [node for child in self.children for node in child.preterminals()]

    def __str__(self):
        if self.is_preterminal:
            return f"({self.label} {self.children[0]})"
        return f"({self.label} {' '.join(str(child) for child in self.children)})"


def parse_tree(text):
    """The Tree of a Penn bracketing such as MultiNLI's ``sentence1_parse``; ValueError if malformed."""
    tokens = text.replace("(", " ( ").replace(")", " ) ").split()
    if not tokens:
        raise ValueError("empty bracketing")
    position = 0

    def read():
        nonlocal position
        if tokens[position] != "(":
            raise ValueError(f"expected '(' at token {position} of {text!r}")
        position += 1
        label = tokens[position] if tokens[position] not in "()" else ""
        if label:
            position += 1
        children = []
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


def head_child(tree):
    """Index of the head child of ``tree`` by the ModCollins rules, with CoreNLP's coordination fix:
    a head right after a CC gives way to the conjunct before the CC ("uniforms and helmets")."""
    labels = [child.label for child in tree.children]
    rules = _HEAD_RULES.get(tree.label.split("-")[0], [("left", "")])
    head = _match_rules(labels, rules)
    # Unless the conjunct's place holds punctuation ("red , white , and blue"): CoreNLP's loop
    # that means to step over it never moves on, and the head stays.
    if head >= 2 and labels[head - 1] in ("CC", "CONJP") and labels[head - 2] not in _PUNCTUATION_TAGS:
        head -= 2
    return head


def _match_rules(labels, rules):
    everything = list(range(len(labels)))
    for direction, wanted in rules:
        wanted = wanted.split()
        order = everything if direction.startswith("left") else everything[::-1]
        if not wanted:
            return order[0]
        if direction.endswith("dis"):
            for i in order:
                if labels[i] in wanted:
                    return i
        else:
            for label in wanted:
                for i in order:
                    if labels[i] == label:
                        return i
    # Nothing matched: the child at the end the last rule searches from.
    return everything[0] if rules[-1][0].startswith("left") else everything[-1]


def binary_parse(tree):
    """MultiNLI's ``sentence*_binary_parse`` of a Penn tree: words only, unary chains collapsed, a
    node of more than two children binarised around its head (its right sisters joined first,
    then its left ones), e.g. ``( ( Two women ) ( ( are ... ) . ) )``."""
    return _binary_text(_binarised(tree))


def _binarised(tree):
    """A word, or a (left, right) pair of binarised constituents."""
    while not tree.is_preterminal and len(tree.children) == 1:
        tree = tree.children[0]
    if tree.is_preterminal:
        return tree.children[0]
    parts = [_binarised(child) for child in tree.children]
    head = head_child(tree)
    node = parts[head]
    for right in parts[head + 1 :]:
        node = (node, right)
    for left in reversed(parts[:head]):
        node = (left, node)
    return node


def _binary_text(node):
    if isinstance(node, str):
        return node
    return f"( {_binary_text(node[0])} {_binary_text(node[1])} )"


# --- from a dependency parse -------------------------------------------------------------------


@dataclass(frozen=True)
class DepToken:
    """One word of a dependency parse: its text, PTB tag, dependency label (spaCy's ClearNLP
    labels: nsubj, dobj, prep, ...) and the index of its head in the sentence (itself for the root)."""

    text: str
    tag: str
    dep: str
    head: int


def tokens_of(sentence):
    """DepTokens of a spaCy sentence (a Span or a Doc), whitespace tokens left out.

    A hyphenated word that spaCy splits ("garage - like") is one token, as the Penn Treebank (and
    the Stanford parser) keep it: it takes the tag, label and head of its part whose head lies
    outside the word.
    """
    # Each spaCy attribute is read once: (index, text, tag, dep, head index, trailing space).
    kept = [
        (token.i, token.text, token.tag_, token.dep_, token.head.i, token.whitespace_)
        for token in sentence
        if not token.is_space
    ]
    groups: list[list[tuple]] = []
    for token in kept:
        previous = groups[-1][-1] if groups else None
        joins = (
            previous is not None
            and not previous[5]
            and ((token[2] == "HYPH" and not token[5]) or (previous[2] == "HYPH" and len(groups[-1]) > 1))
        )
        if joins:
            groups[-1].append(token)
        else:
            groups.append([token])
    if len(groups) == len(kept):
        # No hyphenated word to join, the usual case: positions are the kept tokens'.
        position_of = {token[0]: position for position, token in enumerate(kept)}
        return [
            DepToken(text, tag, dep.lower(), position_of.get(head, position))
            for position, (_, text, tag, dep, head, _) in enumerate(kept)
        ]
    group_of = {token[0]: position for position, group in enumerate(groups) for token in group}
    tokens = []
    for position, group in enumerate(groups):
        members = {token[0] for token in group}
        heads = [token for token in group if token[4] not in members or token[4] == token[0]]
        head = heads[0] if heads else group[-1]
        text = "".join(token[1] for token in group)
        tag = head[2] if len(group) == 1 or head[2] != "HYPH" else group[-1][2]
        tokens.append(DepToken(text, tag, head[3].lower(), group_of.get(head[4], position)))
    return tokens


_BRACKET_WORDS = {"(": "-LRB-", ")": "-RRB-", "[": "-LSB-", "]": "-RSB-", "{": "-LCB-", "}": "-RCB-"}
_NOUN_TAGS = frozenset({"NN", "NNS", "NNP", "NNPS", "PRP", "EX", "NML", "FW", "ADD", "NFP", "XX", "GW", "SYM", "$"})
_VERB_TAGS = frozenset({"VB", "VBD", "VBG", "VBN", "VBP", "VBZ", "MD"})
_ADJECTIVE_TAGS = frozenset({"JJ", "JJR", "JJS", "AFX"})
_ADVERB_TAGS = frozenset({"RB", "RBR", "RBS"})
_WH_TAGS = frozenset({"WDT", "WP", "WP$", "WRB"})
_PUNCTUATION = frozenset({".", ",", ":", "``", "''", "-LRB-", "-RRB-", "HYPH", "NFP"})
_SUBJECTS = frozenset({"nsubj", "nsubjpass", "csubj", "csubjpass", "expl"})
_AUXILIARIES = frozenset({"aux", "auxpass"})
# Left dependents of a noun that stay inside its flat NP, as the Penn Treebank writes NPs.
_NOUN_PREMODIFIERS = frozenset({"det", "amod", "compound", "nummod", "poss", "predet", "nmod", "quantmod", "case"})
_NOMINAL_ROLES = frozenset({"nsubj", "nsubjpass", "dobj", "pobj", "dative", "appos", "npadvmod"})
# Subordinators the Stanford parser heads an SBAR with even before a participle; it reads "while
# waiting" both ways, and PP (as "after eating") scored better on SNLI dev.
_CLAUSE_MARKERS = frozenset({"when", "because", "if", "although", "though"})
_FINITE = frozenset({"VBD", "VBP", "VBZ", "MD"})


def _leaf(token):
    word = _BRACKET_WORDS.get(token.text, token.text)
    tag = token.tag if token.tag not in ("", "_SP") else "NN"
    if token.text in _BRACKET_WORDS and tag not in ("-LRB-", "-RRB-"):
        tag = "-LRB-" if token.text in "([{" else "-RRB-"
    return Tree(tag, [word.replace(" ", "_")])


class _Converter:
    def __init__(self, tokens: Sequence[DepToken]):
        self.tokens = tokens
        self.children: list[list[int]] = [[] for _ in tokens]
        self.roots: list[int] = []
        for i, token in enumerate(tokens):
            if token.head == i or not 0 <= token.head < len(tokens):
                self.roots.append(i)
            else:
                self.children[token.head].append(i)

    # What kind of phrase a word heads.
    def is_noun(self, i):
        token = self.tokens[i]
        if token.tag in _NOUN_TAGS:
            return True
        # A determiner, number or possessive standing for a noun ("Two are playing", "this").
        return token.tag in ("DT", "CD", "PDT", "POS", "WDT", "WP", "PRP$") and token.dep not in (
            "det",
            "nummod",
            "poss",
        )

    def is_verb(self, i):
        return self.tokens[i].tag in _VERB_TAGS

    def deps(self, i, *labels):
        return [j for j in self.children[i] if self.tokens[j].dep in labels]

    # --- phrases ---

    def phrase(self, i):
        """The maximal constituent headed by word i, as its head's dependent."""
        token = self.tokens[i]
        if self.is_verb(i):
            return self.clause(i)
        if token.tag in ("IN", "TO") and (self.deps(i, "pobj", "pcomp") or not self.children[i]):
            return self.prepositional(i)
        if self.is_noun(i):
            return self.noun_phrase(i)
        if token.tag in _ADJECTIVE_TAGS | _ADVERB_TAGS and token.dep in _NOMINAL_ROLES:
            return self.noun_phrase(i)
        if token.tag in _ADJECTIVE_TAGS:
            return self.simple(i, "ADJP")
        if token.tag in _ADVERB_TAGS:
            return self.simple(i, "ADVP")
        if token.tag == "WRB":
            return self.simple(i, "WHADVP")
        if token.tag == "RP":
            return self.simple(i, "PRT")
        if token.tag == "UH":
            return self.simple(i, "INTJ")
        if token.tag == "CD":
            return self.simple(i, "QP") if self.children[i] else self.simple(i, "NP")
        if token.tag in ("IN", "TO"):
            return self.prepositional(i)
        if not self.children[i]:
            return _leaf(token)
        return self.simple(i, "FRAG")

    def items(self, i, dependents, build=None):
        """Word i and its dependents as constituents, in word order."""
        build = build or self.dependent
        placed = [(i, _leaf(self.tokens[i]))] + [(j, build(j)) for j in dependents]
        trees: list[Tree] = []
        for _, tree in sorted(placed, key=lambda item: item[0]):
            # A label-less group (``flat``) is spliced into its parent.
            trees.extend(tree.children if tree.label == "" else [tree])
        return trees

    def dependent(self, j):
        """Dependent j as its head's phrase sees it: punctuation, conjunctions and markers bare."""
        token = self.tokens[j]
        if token.tag in _PUNCTUATION or (
            token.dep in ("punct", "cc", "case", "det", "preconj") and not self.children[j]
        ):
            return _leaf(token)
        if token.dep == "neg" and not self.children[j]:
            return _leaf(token)
        return self.phrase(j)

    def simple(self, i, label):
        """A phrase of a head and its dependents, with coordination if it has conjuncts."""
        conjuncts = self.deps(i, "conj")
        if conjuncts and label in ("ADJP", "ADVP") and self._flat_coordination(i, conjuncts, lambda c: True):
            return Tree(label, self.items(i, self.children[i], self.flat))
        return self.coordinated(i, label, lambda own: Tree(label, self.items(i, own)))

    def coordinated(self, i, label, build):
        """Word i's phrase; if it heads conjuncts (``conj``, chained as spaCy chains them), the
        phrase of each conjunct side by side with the CCs and commas, under ``label``."""
        conjuncts = self.deps(i, "conj")
        if not conjuncts:
            return build(self.children[i])
        first = min(conjuncts)
        cc = [j for j in self.deps(i, "cc", "preconj") if j < first]
        split = min([first] + cc + [j for j in self.deps(i, "punct") if j < first and j > i])
        own = [j for j in self.children[i] if j < split and self.tokens[j].dep != "conj"]
        between = [j for j in self.children[i] if j >= split and j not in conjuncts]
        trailing = [j for j in between if j > max(conjuncts) and self.tokens[j].dep not in ("cc", "punct")]
        between = [j for j in between if j not in trailing]
        own += trailing  # spaCy hangs a modifier shared by every conjunct on the first one
        own.sort()
        members = [(i, build(own))]
        for j in between:
            members.append((j, self.dependent(j)))
        for c in conjuncts:
            members.append((c, self.phrase(c)))
        members.sort(key=lambda item: item[0])
        return Tree(label, [tree for _, tree in members])

    def prepositional(self, i):
        token = self.tokens[i]
        label = "PP"
        if token.tag in _WH_TAGS:
            label = "WHADVP"
        return self.simple(i, label)

    def noun_phrase(self, i):
        label = "WHNP" if self.tokens[i].tag in ("WP", "WDT", "WP$") else "NP"

        def build(own):
            inner = [
                j
                for j in own
                if j < i and (self.tokens[j].dep in _NOUN_PREMODIFIERS or self.tokens[j].tag in _PUNCTUATION)
            ]
            inner += [j for j in own if j > i and self.tokens[j].dep in ("compound", "case", "nummod")]
            outer = [j for j in own if j not in inner]
            core = Tree(label, self.items(i, inner, self.premodifier))
            if not outer:
                return core
            outer_trees = [(j, self.dependent(j)) for j in outer]
            # "a group of boys playing ...": the of-phrase binds first, as the Stanford parser has it.
            after = [(j, tree) for j, tree in outer_trees if j > i]
            if len(after) > 1 and self.tokens[after[0][0]].text.lower() == "of" and after[0][1].label == "PP":
                core = Tree(label, [core, after[0][1]])
                outer_trees.remove(after[0])
            placed = sorted([(i, core), *outer_trees], key=lambda item: item[0])
            return Tree(label, [tree for _, tree in placed])

        conjuncts = self.deps(i, "conj")
        if conjuncts and self._flat_coordination(i, conjuncts):
            # "his face and neck": bare conjoined nouns stay in one flat NP.
            return Tree(label, self.items(i, self.children[i], self.flat))
        return self.coordinated(i, label, build)

    def _flat_coordination(self, i, conjuncts, fits=None):
        fits = fits or (lambda c: self.is_noun(c) and self.tokens[c].tag != "PRP")
        after = [j for j in self.children[i] if j > i]
        if any(self.tokens[j].dep not in ("cc", "conj", "punct") for j in after):
            return False
        chain = list(conjuncts)
        for c in chain:
            if not fits(c):
                return False
            for k in self.children[c]:
                if self.tokens[k].dep == "conj":
                    chain.append(k)
                elif self.tokens[k].dep not in ("cc", "punct"):
                    return False
        return True

    def flat(self, j):
        """Every word under j as a bare preterminal, in order (a flat stretch of an NP)."""
        return Tree("", self._flat_leaves(j))

    def _flat_leaves(self, j):
        return [_leaf(self.tokens[k]) for k in sorted(self._subtree(j))]

    def _subtree(self, j):
        found = [j]
        for k in self.children[j]:
            found.extend(self._subtree(k))
        return found

    def premodifier(self, j):
        """A word inside a flat NP: bare, unless it has words of its own (ADJP, QP, a possessor's NP)."""
        token = self.tokens[j]
        if not self.children[j]:
            if token.dep == "poss" and token.tag not in ("PRP$", "WP$"):
                return Tree("NP", [_leaf(token)])
            return _leaf(token)
        if token.dep == "poss":
            return self.noun_phrase(j)
        if token.tag == "CD":
            return self.simple(j, "QP")
        if any(self.tokens[k].dep in ("advmod", "npadvmod", "cc", "conj") for k in self.children[j]) and (
            token.tag in _ADJECTIVE_TAGS or token.tag in ("VBN", "VBG")
        ):
            return self.simple(j, "ADJP")
        if all(k < j for k in self._subtree(j)) or token.dep == "compound":
            return self.flat(j)
        return self.phrase(j)

    def clause(self, i):
        """A verb's phrase: S (or SBAR, or a bare VP for a noun's modifier), VPs nested at each
        auxiliary, the subject and what precedes it beside the VP."""
        token = self.tokens[i]

        def build(own):
            subjects = [j for j in own if self.tokens[j].dep in _SUBJECTS]
            auxiliaries = [j for j in own if j < i and self.tokens[j].dep in _AUXILIARIES]
            markers = [j for j in own if j < i and self.tokens[j].dep == "mark"]
            wh = [
                j
                for j in own
                if j < i
                and token.dep == "relcl"
                and (
                    self.tokens[j].tag in _WH_TAGS
                    or (self.tokens[j].text.lower() == "that" and self.tokens[j].dep in _SUBJECTS | {"dobj"})
                )
                and not (markers and j > min(markers))
            ]
            subjects = [j for j in subjects if j not in wh]
            start = min(subjects) if subjects else min([*auxiliaries, i])
            clause_level = [j for j in own if j < start and j not in markers + wh and j not in auxiliaries]
            clause_level += subjects
            if subjects:
                clause_level += [j for j in own if max(subjects) < j < min([*auxiliaries, i]) and j not in auxiliaries]
            # Closing punctuation of the clause sits beside the VP, as in "(S (NP ..) (VP ..) (. .))".
            last = max([*own, i])
            trailing = []
            if subjects or token.dep == "root":
                for j in sorted(own, reverse=True):
                    if j > i and self.tokens[j].tag in _PUNCTUATION and j == last:
                        trailing.append(j)
                        last = max([k for k in [*own, i] if k not in trailing])
                    else:
                        break
            rest = [j for j in own if j not in clause_level + markers + wh + trailing + auxiliaries]
            verb_phrase = self.verb_phrase(i, auxiliaries, rest)
            parts = sorted(
                [(j, self.dependent(j)) for j in clause_level + trailing] + [(i, verb_phrase)], key=lambda x: x[0]
            )
            parts = [tree for _, tree in parts]
            needs_clause = bool(subjects) or token.dep in (
                "root",
                "xcomp",
                "ccomp",
                "advcl",
                "pcomp",
                "csubj",
                "relcl",
                "conj",
                "parataxis",
                "pobj",
                "dep",
                "csubjpass",
                "nsubj",
                "dobj",
                "advmod",
            )
            if token.dep in ("acl",) and not subjects:
                needs_clause = False
            if token.dep == "conj" and not subjects:
                needs_clause = False
            body = Tree("S", parts) if needs_clause or len(parts) > 1 else parts[0]
            if wh:
                wh_trees = [self.wh_phrase(j) for j in wh]
                body = Tree("SBAR", [*wh_trees, body])
            if markers:
                marker_trees = [_leaf(self.tokens[j]) if not self.children[j] else self.phrase(j) for j in markers]
                if (
                    not subjects
                    and self.tokens[i].tag in ("VBG", "VBN")
                    and all(
                        self.tokens[j].tag == "IN" and self.tokens[j].text.lower() not in _CLAUSE_MARKERS
                        for j in markers
                    )
                ):
                    body = Tree("PP", [*marker_trees, body])
                else:
                    body = Tree("SBAR", [*marker_trees, body])
            elif token.dep in ("ccomp",) and subjects and any(self.tokens[j].tag in _FINITE for j in [*auxiliaries, i]):
                body = Tree("SBAR", [body])
            return body

        conjuncts = self.deps(i, "conj")
        subject_conjuncts = [c for c in conjuncts if self.deps(c, *_SUBJECTS)]
        if conjuncts and not subject_conjuncts:
            # VP coordination inside one clause: the shared subject and auxiliaries stay outside.
            return build_vp_coordination(self, i, build)
        return self.coordinated(i, "S", build)

    def wh_phrase(self, j):
        token = self.tokens[j]
        if token.tag == "WRB":
            return self.simple(j, "WHADVP")
        if token.tag in ("IN", "TO"):
            return self.simple(j, "WHPP")
        tree = self.phrase(j)
        if tree.label == "NP" or tree.is_preterminal:
            tree = Tree("WHNP", tree.children if not tree.is_preterminal else [tree])
        return tree

    def verb_phrase(self, i, auxiliaries, rest):
        """VP of verb i: its auxiliaries each open a VP around the rest; a word between two
        auxiliaries (an adverb, "not") goes with the first of them."""
        inner = [j for j in rest if not auxiliaries or j > max(auxiliaries)]
        vp = Tree("VP", self.items(i, [j for j in inner if j != i]))
        for position in range(len(auxiliaries) - 1, -1, -1):
            aux = auxiliaries[position]
            upto = auxiliaries[position + 1] if position + 1 < len(auxiliaries) else i
            between = [j for j in rest if aux < j < upto]
            vp = Tree("VP", [_leaf(self.tokens[aux])] + [self.dependent(j) for j in between] + [vp])
        return vp


def build_vp_coordination(converter, i, build):
    """A verb with conjuncts that have no subject of their own: (S subject (VP (VP ..) CC (VP ..)))."""
    self = converter
    conjuncts = self.deps(i, "conj")
    first = min(conjuncts)
    own = [j for j in self.children[i] if j not in conjuncts]
    cc = [j for j in own if self.tokens[j].dep in ("cc", "preconj") and j < first]
    commas = [j for j in own if self.tokens[j].tag in _PUNCTUATION and i < j < max(conjuncts)]
    trailing = [j for j in own if j > max(conjuncts)]
    first_vp_deps = [j for j in own if j > i and j not in cc + commas + trailing]
    leading = [j for j in own if j < i]
    final_punct = [j for j in trailing if self.tokens[j].tag in _PUNCTUATION]
    shared_after = [j for j in trailing if j not in final_punct]
    tree = build(leading + first_vp_deps + final_punct + shared_after)
    # Find the innermost VP of verb i and turn it into the coordination.
    node = _innermost_vp(tree, self.tokens[i])
    if node is None:
        return tree
    first_vp = Tree("VP", node.children)
    members = [(i, first_vp)] + [(j, _leaf(self.tokens[j])) for j in cc + commas]
    for c in conjuncts:
        conj_tree = self.phrase(c)
        if conj_tree.label == "S" and len(conj_tree.children) == 1:
            conj_tree = conj_tree.children[0]
        members.append((c, conj_tree))
    members.sort(key=lambda item: item[0])
    node.children = [t for _, t in members]
    return tree


def _innermost_vp(tree, verb):
    """The VP whose own leaf is ``verb``'s, searching down the rightmost VP chain."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if node.is_preterminal:
            continue
        if node.label == "VP" and any(
            child.is_preterminal and child.children[0] == _leaf(verb).children[0] and child.label == _leaf(verb).label
            for child in node.children
        ):
            return node
        stack.extend(
            reversed(
                [
                    child
                    for child in node.children
                    if not child.is_preterminal and child.label in ("S", "VP", "SBAR", "PP")
                ]
            )
        )
    return None


def constituency_tree(tokens: Sequence[DepToken]):
    """The Penn-style tree ``(ROOT ...)`` of one dependency-parsed sentence (or several: their
    trees side by side under one S, as one line of MultiNLI holds one tree)."""
    if not tokens:
        return Tree("ROOT", [])
    converter = _Converter(tokens)
    phrases = [converter.phrase(root) for root in converter.roots]
    if len(phrases) == 1:
        top = phrases[0]
        if top.is_preterminal:
            top = Tree("FRAG" if top.label not in _NOUN_TAGS else "NP", [top])
    else:
        top = Tree("S", phrases)
    return Tree("ROOT", [top])


def parse_strings(sentence_tokens: Sequence[DepToken]):
    """(parse, binary_parse) as MultiNLI writes them, for one sentence's DepTokens."""
    tree = constituency_tree(sentence_tokens)
    return str(tree), binary_parse(tree)


def parses_of_doc(doc):
    """(parse, binary_parse) of a spaCy Doc parsed as one unit: all its sentences in one tree."""
    return parse_strings(tokens_of(doc))
