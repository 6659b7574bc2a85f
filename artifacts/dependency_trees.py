"""Penn-style constituency trees from spaCy's dependency parse.

Pairs written on the platform have no Stanford parse, so the tagging pass, which runs spaCy's
tagger anyway, also runs its dependency parser and turns the dependency tree into a constituency
tree with the rules below: each word projects a phrase from its Penn Treebank tag (nouns NP,
verbs VP and S, adjectives ADJP, adverbs ADVP, prepositions PP, ...), its dependents go inside it
in word order, and the dependency label says how (a subject goes beside the VP inside S, an
auxiliary opens a VP around the rest, a ``mark`` makes an SBAR, a post-modifier of a noun nests
the NP, a ``conj`` coordinates). ``docs/parses.md`` says how the result differs from the Stanford
parser's and gives the figures.

Pure Python: the converter reads ``(text, tag, dep, head)`` tuples (``DepToken``), so it runs and
is tested without spaCy; ``tokens_of(sentence)`` reads them off a spaCy sentence.
"""

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from artifacts.trees import Tree, binary_parse

# --- from a dependency parse -------------------------------------------------------------------


@dataclass(frozen=True)
class DepToken:
    """One word of a dependency parse: its text, PTB tag, dependency label (spaCy's ClearNLP
    labels: nsubj, dobj, prep, ...) and the index of its head in the sentence (itself for the root)."""

    text: str
    tag: str
    dep: str
    head: int


def tokens_of(sentence: Any) -> list[DepToken]:  # a spaCy Span or Doc
    """DepTokens of a spaCy sentence (a Span or a Doc), whitespace tokens left out.

    A hyphenated word that spaCy splits ("garage - like") is one token, as the Penn Treebank (and
    the Stanford parser) keep it: it takes the tag, label and head of its part whose head lies
    outside the word.
    """
    return dep_tokens(read_tokens(sentence))


# (index, text, tag, dep, head index, trailing space) of one token.
TokenRow = tuple[int, str, str, str, int, str]


def read_tokens(sentence: Any) -> list[TokenRow]:  # a spaCy Span or Doc
    """(index, text, tag, dep, head index, trailing space) of each non-whitespace token of a spaCy
    sentence, each attribute read once; the phenomenon tagger reads its (text, tag) pairs off the
    same tuples. (``Doc.to_array`` was slower on sentences this short: its cost is per call.)"""
    return [
        (token.i, token.text, token.tag_, token.dep_, token.head.i, token.whitespace_)
        for token in sentence
        if not token.is_space
    ]


def dep_tokens(kept: Sequence[TokenRow]) -> list[DepToken]:
    """DepTokens of ``read_tokens`` tuples, a hyphenated word that spaCy split joined again."""
    groups: list[list[TokenRow]] = []
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
# Dependents that get a clause (S) of their own even without a subject; a conjunct only with one.
_CLAUSE_DEPS = frozenset({
    "root", "xcomp", "ccomp", "advcl", "pcomp", "csubj", "relcl", "parataxis", "pobj", "dep", "csubjpass", "nsubj",
    "dobj", "advmod"
})  # fmt: skip
_FINITE = frozenset({"VBD", "VBP", "VBZ", "MD"})


def _leaf(token: DepToken) -> Tree:
    text, tag = token.text, token.tag
    if text not in _BRACKET_WORDS and tag and tag != "_SP" and " " not in text:
        return Tree(tag, [text])  # the usual word: no bracket, no space, a tag of its own
    word = _BRACKET_WORDS.get(text, text)
    tag = tag if tag not in ("", "_SP") else "NN"
    if text in _BRACKET_WORDS and tag not in ("-LRB-", "-RRB-"):
        tag = "-LRB-" if text in "([{" else "-RRB-"
    return Tree(tag, [word.replace(" ", "_")])


class _Converter:
    def __init__(self, tokens: Sequence[DepToken]) -> None:
        self.tokens = tokens
        # Each word's preterminal, made once: a preterminal is never changed once built, so one
        # object can stand wherever the word is placed.
        self.leaves = [_leaf(token) for token in tokens]
        self.children: list[list[int]] = [[] for _ in tokens]
        self.roots: list[int] = []
        for i, token in enumerate(tokens):
            if token.head == i or not 0 <= token.head < len(tokens):
                self.roots.append(i)
            else:
                self.children[token.head].append(i)

    # What kind of phrase a word heads.
    def is_noun(self, i: int) -> bool:
        token = self.tokens[i]
        if token.tag in _NOUN_TAGS:
            return True
        # A determiner, number or possessive standing for a noun ("Two are playing", "this").
        stands_for_noun = token.tag in ("DT", "CD", "PDT", "POS", "WDT", "WP", "PRP$")
        return stands_for_noun and token.dep not in ("det", "nummod", "poss")

    def is_verb(self, i: int) -> bool:
        return self.tokens[i].tag in _VERB_TAGS

    def deps(self, i: int, *labels: str) -> list[int]:
        return [j for j in self.children[i] if self.tokens[j].dep in labels]

    # --- phrases ---

    def phrase(self, i: int) -> Tree:
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
            return self.leaves[i]
        return self.simple(i, "FRAG")

    def items(self, i: int, dependents: Iterable[int], build: Callable[[int], Tree] | None = None) -> list[Tree]:
        """Word i and its dependents as constituents, in word order."""
        build = build or self.dependent
        placed = [(i, self.leaves[i])] + [(j, build(j)) for j in dependents]
        trees: list[Tree] = []
        for _, tree in sorted(placed, key=lambda item: item[0]):
            # A label-less group (``flat``) is spliced into its parent.
            trees.extend(tree.children if tree.label == "" else [tree])
        return trees

    def dependent(self, j: int) -> Tree:
        """Dependent j as its head's phrase sees it: punctuation, conjunctions and markers bare."""
        token = self.tokens[j]
        if token.tag in _PUNCTUATION or (
            token.dep in ("punct", "cc", "case", "det", "preconj") and not self.children[j]
        ):
            return self.leaves[j]
        if token.dep == "neg" and not self.children[j]:
            return self.leaves[j]
        return self.phrase(j)

    def simple(self, i: int, label: str) -> Tree:
        """A phrase of a head and its dependents, with coordination if it has conjuncts."""
        conjuncts = self.deps(i, "conj")
        if conjuncts and label in ("ADJP", "ADVP") and self._flat_coordination(i, conjuncts, lambda c: True):
            return Tree(label, self.items(i, self.children[i], self.flat))
        return self.coordinated(i, label, lambda own: Tree(label, self.items(i, own)))

    def coordinated(self, i: int, label: str, build: Callable[[list[int]], Tree]) -> Tree:
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

    def prepositional(self, i: int) -> Tree:
        token = self.tokens[i]
        label = "PP"
        if token.tag in _WH_TAGS:
            label = "WHADVP"
        return self.simple(i, label)

    def noun_phrase(self, i: int) -> Tree:
        label = "WHNP" if self.tokens[i].tag in ("WP", "WDT", "WP$") else "NP"

        def build(own: list[int]) -> Tree:
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

    def _flat_coordination(self, i: int, conjuncts: list[int], fits: Callable[[int], bool] | None = None) -> bool:
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

    def flat(self, j: int) -> Tree:
        """Every word under j as a bare preterminal, in order (a flat stretch of an NP)."""
        return Tree("", self._flat_leaves(j))

    def _flat_leaves(self, j: int) -> list[Tree]:
        return [self.leaves[k] for k in sorted(self._subtree(j))]

    def _subtree(self, j: int) -> list[int]:
        found = [j]
        for k in self.children[j]:
            found.extend(self._subtree(k))
        return found

    def premodifier(self, j: int) -> Tree:
        """A word inside a flat NP: bare, unless it has words of its own (ADJP, QP, a possessor's NP)."""
        token = self.tokens[j]
        if not self.children[j]:
            if token.dep == "poss" and token.tag not in ("PRP$", "WP$"):
                return Tree("NP", [self.leaves[j]])
            return self.leaves[j]
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

    def clause(self, i: int) -> Tree:
        """A verb's phrase: S (or SBAR, or a bare VP for a noun's modifier), VPs nested at each
        auxiliary, the subject and what precedes it beside the VP."""
        token = self.tokens[i]

        def build(own: list[int]) -> Tree:
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
            placed = {*clause_level, *markers, *wh, *trailing, *auxiliaries}  # once, not per word
            rest = [j for j in own if j not in placed]
            verb_phrase = self.verb_phrase(i, auxiliaries, rest)
            ordered = sorted(
                [(j, self.dependent(j)) for j in clause_level + trailing] + [(i, verb_phrase)], key=lambda x: x[0]
            )
            parts = [tree for _, tree in ordered]
            needs_clause = bool(subjects) or token.dep in _CLAUSE_DEPS
            body = Tree("S", parts) if needs_clause or len(parts) > 1 else parts[0]
            if wh:
                wh_trees = [self.wh_phrase(j) for j in wh]
                body = Tree("SBAR", [*wh_trees, body])
            if markers:
                marker_trees = [self.leaves[j] if not self.children[j] else self.phrase(j) for j in markers]
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

    def wh_phrase(self, j: int) -> Tree:
        token = self.tokens[j]
        if token.tag == "WRB":
            return self.simple(j, "WHADVP")
        if token.tag in ("IN", "TO"):
            return self.simple(j, "WHPP")
        tree = self.phrase(j)
        if tree.label == "NP" or tree.is_preterminal:
            tree = Tree("WHNP", tree.children if not tree.is_preterminal else [tree])
        return tree

    def verb_phrase(self, i: int, auxiliaries: list[int], rest: list[int]) -> Tree:
        """VP of verb i: its auxiliaries each open a VP around the rest; a word between two
        auxiliaries (an adverb, "not") goes with the first of them."""
        inner = [j for j in rest if not auxiliaries or j > max(auxiliaries)]
        vp = Tree("VP", self.items(i, [j for j in inner if j != i]))
        for position in range(len(auxiliaries) - 1, -1, -1):
            aux = auxiliaries[position]
            upto = auxiliaries[position + 1] if position + 1 < len(auxiliaries) else i
            between = [j for j in rest if aux < j < upto]
            vp = Tree("VP", [self.leaves[aux]] + [self.dependent(j) for j in between] + [vp])
        return vp


def build_vp_coordination(converter: _Converter, i: int, build: Callable[[list[int]], Tree]) -> Tree:
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
    node = _innermost_vp(tree, self.leaves[i])
    if node is None:
        return tree
    first_vp = Tree("VP", node.children)
    members = [(i, first_vp)] + [(j, self.leaves[j]) for j in cc + commas]
    for c in conjuncts:
        conj_tree = self.phrase(c)
        if conj_tree.label == "S" and len(conj_tree.children) == 1:
            conj_tree = conj_tree.children[0]
        members.append((c, conj_tree))
    members.sort(key=lambda item: item[0])
    node.children = [t for _, t in members]
    return tree


def _innermost_vp(tree: Tree, verb: Tree) -> Tree | None:
    """The VP whose own leaf is like ``verb`` (a preterminal), searching down the rightmost VP chain."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if node.is_preterminal:
            continue
        if node.label == "VP" and any(
            child.is_preterminal and child.children[0] == verb.children[0] and child.label == verb.label
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


def constituency_tree(tokens: Sequence[DepToken]) -> Tree:
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


def parse_strings(sentence_tokens: Sequence[DepToken]) -> tuple[str, str]:
    """(parse, binary_parse) as MultiNLI writes them, for one sentence's DepTokens."""
    tree = constituency_tree(sentence_tokens)
    return str(tree), binary_parse(tree)


def parses_of_doc(doc: Any) -> tuple[str, str]:  # a spaCy Doc
    """(parse, binary_parse) of a spaCy Doc parsed as one unit: all its sentences in one tree."""
    return parse_strings(tokens_of(doc))
