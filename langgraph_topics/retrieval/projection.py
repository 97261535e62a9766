"""A low-dimensional shadow of a large index's vectors, clustered, for a first pass.

Above ``LARGE_INDEX`` messages a search no longer multiplies the query with every full vector
(at 100,000 messages of 512 floats that product alone reads 200 MB per query), nor with every
row at all. The vectors are projected on their first ``PROJECTED_DIMENSIONS`` principal
components, and the shadows are grouped into ``CLUSTERS`` clusters (k-means on the shadows of
the rows the axes were fitted on): a query is compared with the clusters' centres, the rows of
the ``PROBES`` nearest clusters (and the rows appended since the lists were built) are compared
with its shadow, and only the best of those are scored exactly (``retrieval/evidence.py``). A
search therefore reads a few thousand shadows, however long the thread.

The axes and centres are fitted once, on the index's first ``LARGE_INDEX`` rows, and kept with
each row's shadow and cluster beside the vectors, so opening a large thread computes none of
them::

    retrieval/projection.npz   # mean, axes and cluster centres (written once, atomically)
    retrieval/shadows.f16      # one row of PROJECTED_DIMENSIONS float16 per message, appended
    retrieval/clusters.u16     # each message's cluster (uint16), appended

All are derived data: a missing or damaged file is computed again from the vectors (the
centres of a ``projection.npz`` written before the clusters are fitted on the saved shadows,
and the file rewritten), and a file longer than the vectors is cut back to them.
"""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
CLUSTERS = 256
"""Clusters of shadows: about 400 rows each at 100,000 messages."""
PROBES = 64
"""Clusters whose rows a query compares with its shadow (a quarter of them: on the
benchmarks' hashed bag-of-words vectors, which cluster poorly, 94–100 % of the 50 best rows
by exact cosine are among the 400 best found, against 50–80 % with 8 probes)."""
UNLISTED_ROWS = 8_192
"""Rows appended since the cluster lists were built that a search scans row by row; past
this many (or an eighth of the listed rows) the lists are built again (one sort)."""
AXES_FILE = "projection.npz"
SHADOWS_FILE = "shadows.f16"
CLUSTERS_FILE = "clusters.u16"
_FIT_STEP = 5
"""Every fifth of the first ``LARGE_INDEX`` rows estimates the principal components."""
_KMEANS_ROUNDS = 12
_BYTES_PER_VALUE = 2
_CLUSTER_BYTES = 2

Rows = npt.NDArray[np.int64]
Clusters = npt.NDArray[np.uint16]


@dataclass(frozen=True)
class _Lists:
    """The rows ``[:listed]`` grouped by cluster: ``order[starts[c]:starts[c + 1]]``.

    Their shadows are copied in the same order, so a probe reads one run per cluster.
    """

    listed: int
    order: Rows
    starts: Rows
    shadows: Matrix

    @classmethod
    def of(cls, clusters: Clusters, shadows: Matrix, count: int) -> _Lists:
        order = np.argsort(clusters, kind="stable").astype(np.int64)
        starts = np.searchsorted(clusters[order], np.arange(count + 1)).astype(np.int64)
        return cls(len(clusters), order, starts, np.ascontiguousarray(shadows[order]))


@dataclass(frozen=True)
class Projection:
    """Principal axes of an index's vectors, the shadows of its rows and their clusters."""

    mean: npt.NDArray[np.float32]
    axes: Matrix
    """``(d, k)``: the top ``k`` principal axes as columns."""
    centroids: Matrix
    """``(CLUSTERS, k)``: the clusters' centres, in shadow coordinates."""
    shadows: Matrix
    """``(n, k)``: each row's coordinates on the axes, centred on ``mean``."""
    clusters: Clusters
    """``(n,)``: each row's nearest centre."""
    lists: _Lists
    sample: Matrix
    """About ``STATISTICS_SAMPLE`` full rows spread over the thread, contiguous: their exact
    cosines estimate the mean and deviation of all (drawn again as the thread doubles)."""
    sample_rows: Rows
    """The rows ``sample`` holds."""
    sampled_from: int
    """How many rows there were when ``sample`` was drawn."""
    room: tuple[Matrix, Clusters] | None = None
    """Buffers that ``shadows`` and ``clusters`` are the first rows of (appends fill the rest
    without copying; views handed out earlier end at their own length)."""

    @classmethod
    def fitted(cls, vectors: npt.NDArray[Any]) -> Projection:
        """Fit the axes and clusters on ``vectors`` (at least ``LARGE_INDEX`` rows)."""
        basis = vectors[:LARGE_INDEX:_FIT_STEP].astype(np.float64)
        mean = basis.mean(axis=0)
        centred = basis - mean
        _, eigenvectors = np.linalg.eigh(centred.T @ centred)  # ascending eigenvalues
        axes = np.ascontiguousarray(eigenvectors[:, ::-1][:, :PROJECTED_DIMENSIONS], np.float32)
        centroids = fit_centroids((centred @ axes).astype(np.float32))
        return cls.on_axes(mean.astype(np.float32), axes, centroids, vectors)

    @classmethod
    def on_axes(
        cls,
        mean: npt.NDArray[np.float32],
        axes: Matrix,
        centroids: Matrix,
        vectors: npt.NDArray[Any],
        shadows: npt.NDArray[Any] | None = None,
        clusters: Clusters | None = None,
    ) -> Projection:
        """Known axes and centres, the first rows' shadows and clusters known too.

        The rest are projected and assigned now. Known shadows may be float16 (as saved):
        they are converted into the one float32 matrix of all shadows, not copied first.
        """
        known = 0 if shadows is None else len(shadows)
        all_shadows = np.empty((max(known, len(vectors)), axes.shape[1]), np.float32)
        if shadows is not None:
            all_shadows[:known] = shadows
        all_shadows[known:] = (vectors[known:] - mean) @ axes
        assigned = np.zeros(0, np.uint16) if clusters is None else clusters
        assigned = assigned[: len(all_shadows)]
        all_clusters = np.concatenate(
            [assigned, nearest_centroids(all_shadows[len(assigned) :], centroids)]
        )
        sample, sample_rows = _sample(vectors)
        return cls(
            mean=mean,
            axes=axes,
            centroids=centroids,
            shadows=all_shadows,
            clusters=all_clusters,
            lists=_Lists.of(all_clusters, all_shadows, len(centroids)),
            sample=sample,
            sample_rows=sample_rows,
            sampled_from=len(vectors),
        )

    def shadows_of(self, vectors: npt.NDArray[Any]) -> Matrix:
        """The shadows of new rows."""
        return np.asarray((vectors - self.mean) @ self.axes, dtype=np.float32)

    def clusters_of(self, shadows: Matrix) -> Clusters:
        """The clusters of new rows, from their shadows."""
        return nearest_centroids(shadows, self.centroids)

    def grown(self, vectors: npt.NDArray[Any]) -> Projection:
        """The same axes and centres with the rows ``vectors`` gained since (appends only)."""
        known = len(self.shadows)
        count = len(vectors)
        if count <= known:
            return self
        fresh = self.shadows_of(vectors[known:])
        room = self.room
        if room is None or len(room[0]) < count:
            capacity = max(count, 2 * known)
            room = (
                np.empty((capacity, self.shadows.shape[1]), np.float32),
                np.empty(capacity, np.uint16),
            )
            room[0][:known] = self.shadows
            room[1][:known] = self.clusters
        room[0][known:count] = fresh
        room[1][known:count] = self.clusters_of(fresh)
        shadows, clusters = room[0][:count], room[1][:count]
        lists = self.lists
        if count - lists.listed > max(UNLISTED_ROWS, lists.listed // 8):
            lists = _Lists.of(clusters, shadows, len(self.centroids))
        sample, sample_rows, sampled_from = self.sample, self.sample_rows, self.sampled_from
        if count >= 2 * sampled_from:
            (sample, sample_rows), sampled_from = _sample(vectors), count
        return Projection(
            self.mean,
            self.axes,
            self.centroids,
            shadows,
            clusters,
            lists,
            sample,
            sample_rows,
            sampled_from,
            room,
        )

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

    def approximate(self, query: npt.NDArray[np.float32], rows: Rows) -> npt.NDArray[np.float64]:
        """The approximate dot products of ``rows`` with ``query`` (as :meth:`similarities`)."""
        along = self.axes.T @ query
        return (self.shadows[rows] @ along).astype(np.float64) + float(self.mean @ query)

    def nearest(self, query: npt.NDArray[np.float32], count: int, probes: int = PROBES) -> Rows:
        """About the ``count`` rows of best approximate dot product with ``query``, in no order.

        Only the rows of the ``probes`` clusters whose centres are nearest the query's shadow,
        and the rows not listed yet, are compared: a few thousand, however many there are.
        """
        along = (self.axes.T @ query).astype(np.float32)
        lists = self.lists
        centres = np.sort(best_positions(self.centroids @ along, probes))
        starts, ends = lists.starts[centres], lists.starts[centres + 1]
        sizes = ends - starts
        probed = int(sizes.sum())
        total = probed + len(self.shadows) - lists.listed
        # One product per cluster, as each cluster's run is its own product (a row's last
        # bits depend on where it sits in the product), written in place: no list of arrays.
        dots = np.empty(total, np.float32)
        at = 0
        for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
            np.matmul(lists.shadows[start:end], along, out=dots[at : at + end - start])
            at += end - start
        np.matmul(self.shadows[lists.listed :], along, out=dots[probed:])
        found = np.empty(total, np.int64)
        # Each probed row's place in ``lists.order``: its place in ``dots`` plus its run's shift.
        shifts = starts - (np.cumsum(sizes) - sizes)
        found[:probed] = lists.order[np.arange(probed) + np.repeat(shifts, sizes)]
        found[probed:] = np.arange(lists.listed, len(self.shadows))
        if len(found) <= count:
            return np.sort(found)
        return found[best_positions(dots, count)]


def best_positions(values: npt.NDArray[Any], count: int) -> Rows:
    """Positions of the ``count`` largest values, in no order."""
    if len(values) <= count:
        return np.arange(len(values), dtype=np.int64)
    return np.argpartition(-values, count - 1)[:count].astype(np.int64)


def fit_centroids(points: Matrix, count: int = CLUSTERS) -> Matrix:
    """``count`` k-means centres of ``points`` (deterministic: seeded on evenly spaced rows)."""
    count = max(1, min(count, len(points)))
    centroids = np.ascontiguousarray(points[np.linspace(0, len(points) - 1, count).astype(int)])
    for _ in range(_KMEANS_ROUNDS):
        assigned = nearest_centroids(points, centroids).astype(np.int64)
        sizes = np.bincount(assigned, minlength=count)
        members = np.zeros((count, len(points)), np.float32)
        members[assigned, np.arange(len(points))] = 1.0
        sums = members @ points  # one product, not a scattered add per point
        filled = sizes > 0
        centroids[filled] = (sums[filled] / sizes[filled, None]).astype(np.float32)
    return centroids


def nearest_centroids(points: npt.NDArray[Any], centroids: Matrix) -> Clusters:
    """Each point's nearest centre (Euclidean), in blocks.

    Points are taken as float16 first, as the shadows are saved: a row's cluster is the
    same whether it was assigned when written or again from the file after a crash.
    """
    points = np.asarray(points, np.float16).astype(np.float32)
    out = np.empty(len(points), np.uint16)
    squares = (centroids.astype(np.float32) ** 2).sum(axis=1)
    step = 4096
    for start in range(0, len(points), step):
        block = points[start : start + step]
        out[start : start + step] = np.argmin(squares - 2 * (block @ centroids.T), axis=1)
    return out


def _sample(vectors: npt.NDArray[Any]) -> tuple[Matrix, Rows]:
    step = max(1, len(vectors) // STATISTICS_SAMPLE)
    rows = np.arange(0, len(vectors), step, dtype=np.int64)
    return np.ascontiguousarray(vectors[::step], dtype=np.float32), rows


class ProjectionFiles:
    """The projection's three files in an index directory."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def save(self, projection: Projection) -> None:
        """Write the axes, the centres, every shadow and every cluster (just fitted)."""
        self._save_axes(projection.mean, projection.axes, projection.centroids)
        for name in (SHADOWS_FILE, CLUSTERS_FILE):
            if (self.root / name).exists():
                truncate_durably(self.root / name, 0)
        self.append(projection.shadows, projection.clusters)

    def _save_axes(self, mean: npt.NDArray[np.float32], axes: Matrix, centroids: Matrix) -> None:
        buffer = io.BytesIO()
        np.savez(buffer, mean=mean, axes=axes, centroids=centroids)
        replace_durably(self.root / AXES_FILE, buffer.getvalue())

    def append(self, shadows: Matrix, clusters: Clusters) -> None:
        """Write the shadows and clusters of rows just added to the index."""
        append_durably(self.root / SHADOWS_FILE, np.asarray(shadows, np.float16).tobytes())
        append_durably(self.root / CLUSTERS_FILE, np.asarray(clusters, np.uint16).tobytes())

    def load(self, vectors: npt.NDArray[Any]) -> Projection | None:
        """The saved projection of ``vectors``, or None when there is none or it does not fit.

        Shadows or clusters missing on disk (a crash between two writes) are computed and
        written; centres missing from an older file are fitted on the saved shadows.
        """
        try:
            with np.load(self.root / AXES_FILE) as saved:
                mean = np.asarray(saved["mean"], np.float32)
                axes = np.asarray(saved["axes"], np.float32)
                centroids = (
                    np.asarray(saved["centroids"], np.float32)
                    if "centroids" in saved.files
                    else None
                )
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError) as error:
            log.warning(
                "%s: unreadable (%s); it will be fitted again", self.root / AXES_FILE, error
            )
            return None
        dim = vectors.shape[1] if vectors.ndim == 2 else 0
        if (
            mean.shape != (dim,)
            or axes.ndim != 2
            or axes.shape[0] != dim
            or (
                centroids is not None
                and (
                    centroids.ndim != 2
                    or not 0 < len(centroids) <= CLUSTERS
                    or centroids.shape[1] != axes.shape[1]
                )
            )
        ):
            log.warning("%s: fits other vectors; it will be fitted again", self.root / AXES_FILE)
            return None
        shadows = self._read_rows(SHADOWS_FILE, axes.shape[1] * _BYTES_PER_VALUE, len(vectors))
        saved_shadows = np.frombuffer(shadows, np.float16).reshape(-1, axes.shape[1])
        shadow_rows = len(saved_shadows)
        if centroids is None:
            log.info("%s: fitting the clusters of an index from before them", self.root)
            known = saved_shadows[: min(shadow_rows, LARGE_INDEX) : _FIT_STEP]
            if len(known) < CLUSTERS:
                known = ((vectors[:LARGE_INDEX:_FIT_STEP] - mean) @ axes).astype(np.float32)
            centroids = fit_centroids(np.asarray(known, np.float32))
            self._save_axes(mean, axes, centroids)
            remove_file(self.root / CLUSTERS_FILE)
        cluster_bytes = self._read_rows(CLUSTERS_FILE, _CLUSTER_BYTES, shadow_rows)
        clusters = np.frombuffer(cluster_bytes, np.uint16)
        if clusters.max(initial=0) >= len(centroids):
            log.warning("%s: damaged; assigned again", self.root / CLUSTERS_FILE)
            remove_file(self.root / CLUSTERS_FILE)
            clusters = np.zeros(0, np.uint16)
        if len(clusters) < shadow_rows:
            # Clusters lag their shadows (a crash between the two appends): assign the rest.
            missing = nearest_centroids(
                saved_shadows[len(clusters) :].astype(np.float32), centroids
            )
            append_durably(self.root / CLUSTERS_FILE, missing.tobytes())
            clusters = np.concatenate([clusters, missing])
        projection = Projection.on_axes(
            mean,
            axes,
            centroids,
            vectors,
            saved_shadows,
            np.array(clusters, np.uint16),
        )
        if shadow_rows < len(vectors):
            self.append(projection.shadows[shadow_rows:], projection.clusters[shadow_rows:])
        return projection

    def _read_rows(self, name: str, row_bytes: int, most: int) -> bytes:
        """A file's complete rows, at most ``most``: anything past them is cut off on disk."""
        path = self.root / name
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return b""
        rows = min(len(raw) // row_bytes, most)
        if rows * row_bytes < len(raw):
            truncate_durably(path, rows * row_bytes)
        return raw[: rows * row_bytes]

    def reset(self) -> None:
        """Delete the files (the index is rebuilt)."""
        for name in (AXES_FILE, SHADOWS_FILE, CLUSTERS_FILE):
            remove_file(self.root / name)
