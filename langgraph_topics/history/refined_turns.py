"""Refined turns: one neutral record per split exchange (seed 004 §3).

An exchange is a user message with the replies that follow it (``state.units.group_units``).
Once a split has filed exchanges into topics, the next review (or ``themes``/``trace``, for
what is missing) gives each one line in ``history/refined.jsonl`` beside the topic files::

    {"key": "m012", "ids": ["m012", "m013"], "topic": "t-3f…", "time": "2024-01-10T09:00:00",
     "summary": "We'll use Postgres for the inventory app.", "keywords": ["Postgres", …],
     "entities": ["Postgres"], "states": [{"kind": "chose", "object": "Postgres",
     "message_id": "m012", "sentence": "…"}]}

The summary is extractive (the exchange's most informative sentence, the reply's added when
it names more), so it leans to no theme and every theme can quote it; keywords leave small talk
out (``history.terms``); ``states`` are the changes of state its messages state
(``history.states``). ``topic`` is the topic the exchange entered; merges and subtopics move
messages later, so readers ask the store where they are now.

The file is append-only: one durable append per call (``stores.durable.append_durably``). A
message already in a record is never recorded again, so messages split again after a crash
are recorded once. A torn last line (a crash during the append) is ignored when read and
cut before the next append; its exchanges are recorded again by the next use
(:meth:`RefinedTurnLog.backfill`), as are messages split before this layer existed.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TypedDict

from langgraph_topics.history.states import StateSignal, state_signals
from langgraph_topics.history.terms import entities_of, ranked_keywords, words_of
from langgraph_topics.keywords.small_talk import is_small_talk
from langgraph_topics.roles.native.text import clip, message_text, split_sentences
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.state.units import group_units
from langgraph_topics.stores.durable import append_durably, truncate_durably
from langgraph_topics.stores.jsonl_lines import decode_lines

log = logging.getLogger(__name__)

HISTORY_DIR = "history"
"""The folder of the history layer, in the thread's directory."""
REFINED_FILE = "refined.jsonl"
SUMMARY_CHARS = 160
KEYWORDS_PER_TURN = 8
_SPOKEN = ("user", "assistant")
_USER_WEIGHT = 2.0
"""The user's words count twice: they say what the exchange is about, the reply elaborates."""


class RefinedTurn(TypedDict):
    """One exchange as the history layer keeps it."""

    key: str
    """Its first message's id (an exchange is recorded once)."""
    ids: list[str]
    """Its messages, in order."""
    topic: str
    """The topic it entered when it was split."""
    time: str | None
    """Its first dated message's time (ISO-8601)."""
    summary: str
    keywords: list[str]
    entities: list[str]
    states: list[StateSignal]


def refine_exchange(
    messages: Sequence[StoredMessage], topic_id: str, speakers: Iterable[str] = ()
) -> RefinedTurn:
    """The record of one exchange (a user message and its replies).

    ``speakers``: the names of the other speakers of the run it was split with (lower-cased):
    an exchange that holds one speaker's line alone still leaves the other's name out.
    """
    texts = [message_text(m) for m in messages]
    said = [(m, t) for m, t in zip(messages, texts, strict=True) if m["role"] in _SPOKEN]
    spoken = [t for _, t in said]  # tool results are material, not what was talked about
    weights = [_USER_WEIGHT if m["role"] == "user" else 1.0 for m, _ in said]
    speakers = speakers_of(messages) | set(speakers)
    keywords = [
        w
        for w in ranked_keywords(spoken, KEYWORDS_PER_TURN + 2, weights)
        if not _names(w, speakers)
    ][:KEYWORDS_PER_TURN]
    states: list[StateSignal] = []
    for message, text in said:
        states.extend(state_signals(message["id"], text))
    time = next((m["timestamp"] for m in messages if m.get("timestamp")), None)
    return {
        "key": messages[0]["id"],
        "ids": [m["id"] for m in messages],
        "topic": topic_id,
        "time": time,
        "summary": summary_of(messages),
        "keywords": keywords,
        "entities": [e for e in entities_of(spoken) if not _names(e, speakers)],
        "states": states,
    }


def speakers_of(messages: Sequence[StoredMessage]) -> set[str]:
    """The speakers' names and their parts, lower-cased (``Melanie``, ``孙悦``)."""
    found: set[str] = set()
    for message in messages:
        name = message.get("name")
        if name:
            found.add(name.lower())
            found.update(part.lower() for part in name.split() if len(part) >= 2)
    return found


def _names(word: str, speakers: set[str]) -> bool:
    """Whether a word names a speaker (or addresses one: "Mel" for Melanie): no subject."""
    lowered = word.lower()
    return any(
        lowered == name or (len(lowered) >= 3 and name.startswith(lowered)) for name in speakers
    )


def summary_of(messages: Sequence[StoredMessage]) -> str:
    """One extractive line: the user's most informative sentence, the reply's when it adds."""
    user = [message_text(m) for m in messages if m["role"] == "user"]
    reply = [message_text(m) for m in messages if m["role"] == "assistant"]
    first = _best_sentence(user) or _best_sentence(reply) or ""
    line = first
    if user:
        second = _best_sentence(reply)
        known = set(words_of(first))
        if second and len([w for w in words_of(second) if w not in known]) >= 2:
            line = f"{first} — {second}" if first else second
    return clip(line, SUMMARY_CHARS)


def _best_sentence(texts: Iterable[str]) -> str:
    best, score = "", 0.0
    for text in texts:
        for sentence in split_sentences(text):
            if is_small_talk(sentence):
                continue
            named = len(set(words_of(sentence)))
            if named > score:
                best, score = sentence, float(named)
    return best


def exchanges(messages: Sequence[StoredMessage]) -> list[list[StoredMessage]]:
    """The exchanges of a run of messages in conversation order (a user message opens one)."""
    return group_units(messages)


class RefinedTurnLog:
    """A thread's refined turns: read from ``history/refined.jsonl``, appended per split.

    Thread-safe. Reads follow appends made by other processes (the file is read on from
    where the last read stopped). ``root=None`` keeps the records in memory only.
    """

    def __init__(self, root: Path | None) -> None:
        self.root = root
        self.path = root / REFINED_FILE if root is not None else None
        self._records: list[RefinedTurn] = []
        self._covered: dict[str, int] = {}
        """Each recorded message id → the index of its record."""
        self._offset = 0
        self._torn = False
        self.unreadable: list[int] = []
        """Line numbers of lines that are not records (damage), skipped."""
        self._lines = 0
        self._lock = threading.RLock()
        self.cache: tuple[object, object] | None = None
        """What was last computed from the records, under its fingerprint (``history.view``)."""
        self.view_state: object | None = None
        """The units, buckets and themes of the records, as last computed or read back
        (``history.view_cache.ViewState``): extended when records are added."""

    # ------------------------------------------------------------------------------ reading

    def records(self) -> list[RefinedTurn]:
        """Every record, in the order written (split order: conversation order)."""
        with self._lock:
            self._catch_up()
            return list(self._records)

    def covered(self) -> set[str]:
        """Ids of the messages some record holds."""
        with self._lock:
            self._catch_up()
            return set(self._covered)

    def fingerprint(self) -> tuple[int, int]:
        """Changes whenever a record is added: (records, bytes read)."""
        with self._lock:
            self._catch_up()
            return len(self._records), self._offset

    @property
    def torn(self) -> bool:
        """Whether the file ends in a line a crash cut short (cut before the next append)."""
        with self._lock:
            self._catch_up()
            return self._torn

    def _catch_up(self) -> None:
        if self.path is None:
            return
        try:
            with self.path.open("rb") as handle:
                handle.seek(self._offset)
                raw = handle.read()
        except FileNotFoundError:
            return
        complete = raw.rfind(b"\n") + 1
        self._torn = complete < len(raw)
        if not complete:
            return
        lines = raw[:complete].split(b"\n")[:-1]
        for number, record in decode_lines(lines, self._lines + 1):
            if record is None or not _is_record(record):
                self.unreadable.append(number)
                log.warning("%s:%d: unreadable refined turn skipped", self.path, number)
                continue
            self._remember(record)  # type: ignore[arg-type]
        self._lines += len(lines)
        self._offset += complete

    def _remember(self, record: RefinedTurn) -> None:
        fresh = [i for i in record["ids"] if i not in self._covered]
        if not fresh:
            return
        place = len(self._records)
        self._records.append(record)
        for message_id in fresh:
            self._covered[message_id] = place

    # ------------------------------------------------------------------------------ writing

    def add(self, messages: Sequence[StoredMessage], topic_ids: Sequence[str]) -> int:
        """Record the exchanges of split messages (conversation order, each with its topic).

        Messages some record holds already are skipped (a split made again after a crash).
        One durable append for all of them.

        Returns:
            How many records were written.
        """
        with self._lock:
            self._catch_up()
            fresh = [
                (m, t)
                for m, t in zip(messages, topic_ids, strict=True)
                if m["id"] not in self._covered
            ]
            if not fresh:
                return 0
            topic_of = {m["id"]: t for m, t in fresh}
            speakers = speakers_of([m for m, _ in fresh])
            made = [
                refine_exchange(exchange, topic_of[exchange[0]["id"]], speakers)
                for exchange in exchanges([m for m, _ in fresh])
            ]
            self._append(made)
            return len(made)

    def backfill(self, ordered: Sequence[StoredMessage], located: Mapping[str, str]) -> int:
        """Record the split messages no record holds (split before this layer, or torn).

        Args:
            ordered: Split messages in conversation order (only those without a record are
                read: pass what ``missing`` names).
            located: Each message id's topic now.
        """
        return self.add(ordered, [located.get(m["id"], "") for m in ordered])

    def missing(self, split_ids: Iterable[str]) -> list[str]:
        """Which of ``split_ids`` (in the order given) no record holds."""
        with self._lock:
            self._catch_up()
            return [i for i in split_ids if i not in self._covered]

    def _append(self, made: Sequence[RefinedTurn]) -> None:
        if self.path is not None:
            assert self.root is not None
            self.root.mkdir(parents=True, exist_ok=True)
            if self._torn:  # a crash cut the last append short: cut it off before writing
                truncate_durably(self.path, self._offset)
                self._torn = False
            data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in made).encode()
            append_durably(self.path, data)
            self._offset += len(data)
            self._lines += len(made)
        for record in made:
            self._remember(record)


def _is_record(record: Mapping[str, object]) -> bool:
    ids = record.get("ids")
    return (
        isinstance(record.get("key"), str)
        and isinstance(ids, list)
        and bool(ids)
        and all(isinstance(i, str) for i in ids)
        and isinstance(record.get("summary"), str)
        and isinstance(record.get("keywords"), list)
        and isinstance(record.get("states", []), list)
    )
