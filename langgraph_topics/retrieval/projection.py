"""A low-dimensional shadow of a large index's vectors, for a first pass over every message.

Above ``LARGE_INDEX`` messages a search no longer multiplies the query with every full vector
(at 100,000 messages of 512 floats that product alone reads 200 MB per query). Instead the
vectors are projected on their first ``PROJECTED_DIMENSIONS`` principal components, the query
is compared with these shadows, and only the best candidates are scored exactly
(``retrieval/evidence.py``).

The axes are fitted once, on the index's first ``LARGE_INDEX`` rows, and kept with the shadows
beside the vectors, so opening a large thread computes neither::

    retrieval/projection.npz   # mean and axes (written once, atomically)
    retrieval/shadows.f16      # one row of PROJECTED_DIMENSIONS float16 per message, appended

Both are derived data: a missing or damaged file is computed again from the vectors.
"""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from langgraph_topics.retrieval.row_dots import row_dots
from langgraph_topics.roles.native.vectors import Matrix
from langgraph_topics.stores.durable import (
    append_durably,
    remove_file,
    replace_durably,
    truncate_durably,
)

log = logging.getLogger(__name__)

LARGE_INDEX = 20_000
"""From this many indexed messages on, searches take the two-pass route."""
PROJECTED_DIMENSIONS = 64
STATISTICS_SAMPLE = 1024
AXES_FILE = "projection.npz"
SHADOWS_FILE = "shadows.f16"
_FIT_STEP = 5
"""Every fifth of the first ``LARGE_INDEX`` rows estimates the principal components."""
_BYTES_PER_VALUE = 2


@dataclass(frozen=True)
class Projection:
    """Principal axes of an index's vectors and the shadows of its rows."""

    mean: npt.NDArray[np.float32]
    axes: Matrix
    """``(d, k)``: the top ``k`` principal axes as columns."""
    shadows: Matrix
    """``(n, k)``: each row's coordinates on the axes, centred on ``mean``."""
    sample: Matrix
    """About ``STATISTICS_SAMPLE`` full rows spread over the thread, contiguous: their exact
    cosines estimate the mean and deviation of all (drawn again as the thread doubles)."""
    sampled_from: int
    """How many rows there were when ``sample`` was drawn."""

    @classmethod
    def fitted(cls, vectors: Matrix) -> Projection:
        """Fit the axes on ``vectors`` (at least ``LARGE_INDEX`` rows) and project them all."""
        basis = vectors[:LARGE_INDEX:_FIT_STEP].astype(np.float64)
        mean = basis.mean(axis=0)
        centred = basis - mean
        _, eigenvectors = np.linalg.eigh(centred.T @ centred)  # ascending eigenvalues
        axes = np.ascontiguousarray(eigenvectors[:, ::-1][:, :PROJECTED_DIMENSIONS], np.float32)
        return cls.on_axes(
            mean.astype(np.float32), axes, vectors, np.zeros((0, axes.shape[1]), np.float32)
        )

    @classmethod
    def on_axes(
        cls,
        mean: npt.NDArray[np.float32],
        axes: Matrix,
        vectors: Matrix,
        shadows: Matrix,
    ) -> Projection:
        """Known axes, the first rows' shadows known too; the rest are projected now."""
        rest = (vectors[len(shadows) :] - mean) @ axes
        known = np.asarray(shadows, dtype=np.float32)
        return cls(mean, axes, np.concatenate([known, rest]), _sample(vectors), len(vectors))

    def shadows_of(self, vectors: Matrix) -> Matrix:
        """The shadows of new rows."""
        return np.asarray((vectors - self.mean) @ self.axes, dtype=np.float32)

    def grown(self, vectors: Matrix) -> Projection:
        """The same axes with the rows ``vectors`` gained since (the index only appends)."""
        known = len(self.shadows)
        if len(vectors) <= known:
            return self
        shadows = np.concatenate([self.shadows, self.shadows_of(vectors[known:])])
        if len(vectors) >= 2 * self.sampled_from:
            return Projection(self.mean, self.axes, shadows, _sample(vectors), len(vectors))
        return Projection(self.mean, self.axes, shadows, self.sample, self.sampled_from)

    def cosine_statistics(self, query: npt.NDArray[np.float32]) -> tuple[float, float]:
        """The (mean, deviation) of the thread's exact cosines with ``query``, from the sample."""
        # Row by row on this thread: the sample (~1,000 × 512 values) is over the size from
        # which OpenBLAS wakes its threads, which on a busy machine cost 10 ms instead of 0.1.
        exact = row_dots(self.sample, query)
        return float(exact.mean()), float(exact.std())

    def similarities(self, query: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
        """Every row's approximate dot product with ``query`` (exact on the axes' span)."""
        along = self.axes.T @ query
        return row_dots(self.shadows, along).astype(np.float64) + float(self.mean @ query)


def _sample(vectors: Matrix) -> Matrix:
    return np.ascontiguousarray(vectors[:: max(1, len(vectors) // STATISTICS_SAMPLE)])


class ProjectionFiles:
    """The projection's two files in an index directory."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def save(self, projection: Projection) -> None:
        """Write the axes and every shadow (the projection was just fitted)."""
        buffer = io.BytesIO()
        np.savez(buffer, mean=projection.mean, axes=projection.axes)
        replace_durably(self.root / AXES_FILE, buffer.getvalue())
        path = self.root / SHADOWS_FILE
        if path.exists():
            truncate_durably(path, 0)
        self.append(projection.shadows)

    def append(self, shadows: Matrix) -> None:
        """Write the shadows of rows just added to the index."""
        append_durably(self.root / SHADOWS_FILE, np.asarray(shadows, np.float16).tobytes())

    def load(self, vectors: Matrix) -> Projection | None:
        """The saved projection of ``vectors``, or None when there is none or it does not fit.

        Shadows missing on disk (a crash between two writes) are computed and written.
        """
        try:
            with np.load(self.root / AXES_FILE) as saved:
                mean = np.asarray(saved["mean"], np.float32)
                axes = np.asarray(saved["axes"], np.float32)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError) as error:
            log.warning(
                "%s: unreadable (%s); it will be fitted again", self.root / AXES_FILE, error
            )
            return None
        dim = vectors.shape[1] if vectors.ndim == 2 else 0
        if mean.shape != (dim,) or axes.ndim != 2 or axes.shape[0] != dim:
            log.warning("%s: fits other vectors; it will be fitted again", self.root / AXES_FILE)
            return None
        path = self.root / SHADOWS_FILE
        row_bytes = axes.shape[1] * _BYTES_PER_VALUE
        raw = path.read_bytes() if path.exists() else b""
        rows = min(len(raw) // row_bytes, len(vectors))
        if rows * row_bytes < len(raw):
            truncate_durably(path, rows * row_bytes)
        shadows = np.frombuffer(raw[: rows * row_bytes], np.float16).reshape(rows, -1)
        projection = Projection.on_axes(mean, axes, vectors, shadows.astype(np.float32))
        if rows < len(vectors):
            self.append(projection.shadows[rows:])
        return projection

    def reset(self) -> None:
        """Delete the files (the index is rebuilt)."""
        for name in (AXES_FILE, SHADOWS_FILE):
            remove_file(self.root / name)
