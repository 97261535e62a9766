"""One value per message of a thread, stored for the scored candidates only.

On a large index only the candidates of a query are scored (``Evidence.candidates``); every
other message holds one floor value. Filling three thread-long arrays per query with that floor
(score, relevance, cosine) wrote 2.4 MB at 100,000 messages, 0.2–0.4 ms of a turn timed inside
real turns; a :class:`CandidateValues` keeps the candidates' positions and values and answers
a read with a binary search among them.

It is read as the array it stands for, by a position (a float) or by positions (an array of
them); ``np.asarray`` builds the whole array, bit for bit the one the search used to fill.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Any, overload

import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.float64]
Positions = npt.NDArray[np.int64]


class CandidateValues:
    """``total`` values: ``values`` at the ascending ``positions``, ``floor`` everywhere else."""

    def __init__(self, positions: Positions, values: Floats, floor: float, total: int) -> None:
        if len(positions) != len(values):
            raise ValueError(f"{len(positions)} positions for {len(values)} values")
        self.positions = positions
        self.values = np.asarray(values, dtype=np.float64)
        self.floor = float(floor)
        self._total = total
        self._listed: list[int] | None = None

    def __len__(self) -> int:
        return self._total

    @overload
    def __getitem__(self, key: int | np.integer[Any]) -> float: ...

    @overload
    def __getitem__(self, key: Positions | list[int]) -> Floats: ...

    def __getitem__(self, key: int | np.integer[Any] | Positions | list[int]) -> Any:
        if isinstance(key, int | np.integer):
            return self._one(int(key))
        rows = np.asarray(key)
        if rows.dtype == np.bool_:
            raise TypeError("candidate values are read by position, not by mask")
        return self._many(rows.astype(np.int64, copy=False))

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> Floats:
        whole = np.full(self._total, self.floor)
        whole[self.positions] = self.values
        return whole if dtype is None else whole.astype(dtype)

    def _one(self, position: int) -> float:
        if position < 0:
            position += self._total
        if not 0 <= position < self._total:
            raise IndexError(f"position {position} of {self._total} values")
        if self._listed is None:
            # A turn reads a few dozen single values: one list, then a bisection each.
            self._listed = self.positions.tolist()
        place = bisect_left(self._listed, position)
        if place < len(self._listed) and self._listed[place] == position:
            return float(self.values[place])
        return self.floor

    def _many(self, rows: Positions) -> Floats:
        if len(rows) and (rows.min() < -self._total or rows.max() >= self._total):
            raise IndexError(f"positions outside {self._total} values")
        rows = np.where(rows < 0, rows + self._total, rows)
        if not len(self.positions):
            return np.full(len(rows), self.floor)
        places = np.minimum(np.searchsorted(self.positions, rows), len(self.positions) - 1)
        found = self.positions[places] == rows
        return np.where(found, self.values[places], self.floor)
