"""The history view kept on disk: units, buckets and themes beside ``refined.jsonl``.

Computing them from the refined turns takes about a second at 10,000 messages; a new process
(a CLI call, a restarted server) would pay it at its first question. ``history/view.cache``
keeps what was computed, with what it was computed from, so that a later question reads it
back and only extends it by the exchanges recorded since (``history.view``).

Derived data only: every part of it is computed again from the refined turns and the message
index, so a damaged or stale file costs a recomputation (with one warning), never a record.
It is written whole (``stores.durable.replace_durably``): a reader, or the process after a
crash, finds the old file or the new one. The file::

    {"format": 1, "fingerprint": "…", "body": 123456, "digest": "…"}  (one line)
    <body: a JSON document, a newline, the float32 arrays it describes>

``fingerprint`` names the refined turns it was made from (their keys, topics, sizes and
times, in order), ``digest`` the body's bytes: a torn or changed byte is found before
anything is read from it.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from langgraph_topics.history.themes import Theme
from langgraph_topics.history.units import Unit, Vector
from langgraph_topics.stores.durable import replace_durably

log = logging.getLogger(__name__)

VIEW_CACHE_FILE = "view.cache"
"""The view's file, in the history folder (``refined_turns.HISTORY_DIR``)."""
FORMAT = 1
"""Raised whenever what is stored changes meaning, or how the units, buckets or themes are
computed from the refined turns: an older file is then computed again, not served."""


class DamagedViewCache(ValueError):
    """The view's file cannot be read back as it was written (one line says why)."""


@dataclass
class ViewState:
    """Units, buckets and themes of a run of refined turns, and what extending them needs."""

    signatures: list[str]
    """The refined turns they were made from, in order (``turn_signature``)."""
    anchor: int
    """How many turns there were when the exchanges' centre was taken."""
    centre: Vector | None
    """The mean exchange the turns' directions are centred on (``units.exchange_vectors``)."""
    probe: str
    """A digest of the first turn's indexed vector: another embedder's index differs."""
    units: list[Unit]
    buckets: list[list[int]]
    sums: npt.NDArray[np.float32]
    """Each bucket's summed unit directions, the last unit left out (it is made again)."""
    themes: list[Theme]

    @property
    def fingerprint(self) -> str:
        """Names the turns the state was made from."""
        return signatures_digest(self.signatures)


def turn_signature(key: str, topic: str, size: int, time: str | None) -> str:
    """What a refined turn brings to the units: which exchange, where, how long, when."""
    return f"{key}\t{topic}\t{size}\t{time or ''}"


def signatures_digest(signatures: Sequence[str]) -> str:
    """One digest of a list of turn signatures."""
    digest = hashlib.sha1()
    for signature in signatures:
        digest.update(signature.encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def vector_probe(vector: npt.NDArray[np.float32] | None) -> str:
    """The digest of one indexed vector (empty: none).

    Taken at half precision, as the index stores it: a process that has just embedded the
    message may still hold its full-precision vector.
    """
    if vector is None:
        return ""
    return hashlib.sha1(np.asarray(vector, dtype=np.float16).tobytes()).hexdigest()[:16]


# ---------------------------------------------------------------------------------- writing


def save_view_state(path: Path, state: ViewState) -> None:
    """Write the state whole, replacing the file (atomic and durable).

    Raises:
        OSError: The file could not be written (the caller carries on without it).
    """
    centre = state.centre if state.centre is not None else np.zeros(0, dtype=np.float32)
    sums = np.ascontiguousarray(state.sums, dtype=np.float32)
    document = {
        "signatures": state.signatures,
        "anchor": state.anchor,
        "probe": state.probe,
        "units": [_unit_record(unit) for unit in state.units],
        "buckets": state.buckets,
        "themes": [asdict(theme) for theme in state.themes],
        "centre": int(centre.shape[0]),
        "sums": [int(sums.shape[0]), int(sums.shape[1])],
    }
    arrays = np.asarray(centre, dtype=np.float32).tobytes() + sums.tobytes()
    body = json.dumps(document, ensure_ascii=False).encode("utf-8") + b"\n" + arrays
    header = {
        "format": FORMAT,
        "fingerprint": state.fingerprint,
        "body": len(body),
        "digest": hashlib.sha1(body).hexdigest(),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_durably(path, json.dumps(header).encode("utf-8") + b"\n" + body)


def _unit_record(unit: Unit) -> dict[str, Any]:
    return {
        "id": unit.id,
        "turns": unit.turns,
        "counts": dict(unit.counts),
        "strength": unit.strength,
        "forms": unit.forms,
        "topics": unit.topics,
        "start": unit.start,
        "end": unit.end,
        "kind": unit.kind,
        "headline": unit.headline,
        "bucket": unit.bucket,
    }


# ---------------------------------------------------------------------------------- reading


def load_view_state(path: Path) -> ViewState | None:
    """The state the file holds; None when there is none, or (one warning) a damaged one."""
    try:
        return read_view_state(path)
    except FileNotFoundError:
        return None
    except (OSError, DamagedViewCache) as error:
        log.warning("%s: %s; computed again from the refined turns", path, error)
        return None


def read_view_state(path: Path) -> ViewState:
    """The state the file holds.

    Raises:
        FileNotFoundError: There is no file.
        DamagedViewCache: It is not what ``save_view_state`` wrote (torn, changed, another
            format); it is derived data, computed again when next asked for.
        OSError: It cannot be read.
    """
    raw = path.read_bytes()
    line_end = raw.find(b"\n")
    try:
        header = json.loads(raw[:line_end]) if line_end > 0 else None
    except ValueError:
        header = None
    if not isinstance(header, dict):
        raise DamagedViewCache("damaged view cache (no header)")
    if header.get("format") != FORMAT:
        raise DamagedViewCache(f"view cache of another format ({header.get('format')!r})")
    body = raw[line_end + 1 :]
    if header.get("body") != len(body) or header.get("digest") != hashlib.sha1(body).hexdigest():
        raise DamagedViewCache("damaged view cache (its bytes do not match their digest)")
    try:
        state = _decode(body)
    except (ValueError, KeyError, TypeError, IndexError) as error:
        raise DamagedViewCache(f"damaged view cache ({error})") from error
    if state.fingerprint != header.get("fingerprint"):
        raise DamagedViewCache("damaged view cache (its turns do not match its fingerprint)")
    return state


def view_cache_damage(path: Path) -> str | None:
    """Why the file cannot be used, or None (sound, or absent): for ``check``."""
    try:
        read_view_state(path)
    except FileNotFoundError:
        return None
    except (OSError, DamagedViewCache) as error:
        return str(error)
    return None


def _decode(body: bytes) -> ViewState:
    split = body.index(b"\n")
    document = json.loads(body[:split])
    if not isinstance(document, dict):
        raise ValueError("not a JSON object")
    arrays = body[split + 1 :]
    size = int(document["centre"])
    rows, columns = (int(n) for n in document["sums"])
    if len(arrays) != 4 * (size + rows * columns):
        raise ValueError("its arrays are cut short")
    flat = np.frombuffer(arrays, dtype=np.float32)
    centre = flat[:size].copy() if size else None
    sums = flat[size:].reshape(rows, columns).copy()
    signatures = [str(s) for s in document["signatures"]]
    units = [_unit(record) for record in document["units"]]
    buckets = [[int(i) for i in members] for members in document["buckets"]]
    themes = [_theme(record) for record in document["themes"]]
    _check_shape(len(signatures), units, buckets, themes, sums)
    return ViewState(
        signatures=signatures,
        anchor=int(document["anchor"]),
        centre=centre,
        probe=str(document["probe"]),
        units=units,
        buckets=buckets,
        sums=sums,
        themes=themes,
    )


def _check_shape(
    turns: int,
    units: Sequence[Unit],
    buckets: Sequence[Sequence[int]],
    themes: Sequence[Theme],
    sums: npt.NDArray[np.float32],
) -> None:
    """What the extension relies on: units cover the turns in order, every index is in range."""
    covered = [place for unit in units for place in unit.turns]
    if covered != list(range(turns)) or any(not unit.turns for unit in units):
        raise ValueError("its units do not cover its turns in order")
    members = sorted(i for bucket in buckets for i in bucket)
    if members != list(range(len(units))) or sums.shape[0] != len(buckets):
        raise ValueError("its buckets do not hold each unit once")
    if any(not 0 <= i < len(units) for theme in themes for i in theme.units):
        raise ValueError("a theme names a unit it does not have")


def _unit(record: Mapping[str, Any]) -> Unit:
    return Unit(
        id=str(record["id"]),
        turns=[int(i) for i in record["turns"]],
        counts=Counter({str(k): int(v) for k, v in record["counts"].items()}),
        strength={str(k): float(v) for k, v in record["strength"].items()},
        forms={str(k): str(v) for k, v in record["forms"].items()},
        topics=[str(t) for t in record["topics"]],
        start=_optional(record["start"]),
        end=_optional(record["end"]),
        kind=str(record["kind"]),
        headline=[str(k) for k in record["headline"]],
        bucket=int(record["bucket"]),
    )


def _theme(record: Mapping[str, Any]) -> Theme:
    return Theme(
        id=str(record["id"]),
        name=str(record["name"]),
        keys=[str(k) for k in record["keys"]],
        keywords=[str(k) for k in record["keywords"]],
        units=[int(i) for i in record["units"]],
        weight=float(record["weight"]),
    )


def _optional(value: object) -> str | None:
    return None if value is None else str(value)
