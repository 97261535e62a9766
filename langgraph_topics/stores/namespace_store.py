"""The tool-result namespace (seed 001 T2): full texts of large tool results, by reference.

The namespace is a cache, not the record: the topic files and the transcript keep every tool
result in full (the seed's case 4), so an entry that is lost, evicted or damaged is written
again from the message the next time the message is in view. Entries are content-addressed
(``namespace://tool/<first 16 hex of SHA-256>``), so storing the same text twice is one entry.

The embedded store keeps one JSON file per entry under the thread's directory (beside the
topic files), written whole or not at all, with a byte-bounded LRU of texts in memory. A
server store (LangGraph ``BaseStore``, a key-value service) implements the same protocol.

An entry keeps what seed 001 T2's ``NamespaceEntry`` keeps (:class:`NamespaceEntry`): the
reference, the tool's name and the arguments of the call that produced the text, the text,
its preview, when it was first stored and how often ``read_namespace`` read it. The reads are
counted apart from the text (``<digest>.reads``, one short line appended per read), so a read
never rewrites the entry. Entries written before these fields load with empty arguments and
preview, and with their file's time as ``created_at``.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections import Counter, OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from langgraph_topics.namespace.reference import (
    DIGEST_CHARS,
    REFERENCE_PREFIX,
    content_digest,
    digest_of,
)
from langgraph_topics.stores.durable import replace_durably

log = logging.getLogger(__name__)

CACHE_BYTES = 10_000_000
"""Default bound of the in-memory LRU (seed 001 T2 case 3: ``max_bytes = 10MB``)."""


READS_SUFFIX = ".reads"
"""The side file counting an entry's reads: one line (the time) per ``read_namespace``."""


class NamespaceEntryError(ValueError):
    """A stored entry cannot be read back (the message names the file and the problem)."""


@dataclass(frozen=True)
class NamespaceEntry:
    """One stored tool result with what is known of it (seed 001 T2's ``NamespaceEntry``)."""

    key: str
    """The reference, ``namespace://tool/<digest>``."""
    tool_name: str
    """The tool whose result it is ('' when the message named none)."""
    args: dict[str, Any]
    """The arguments of the tool call that produced it first ({} when its call was not at
    hand, or for an entry stored before arguments were kept)."""
    content: str
    content_summary: str
    """The preview stored with it (what the window showed under its reference)."""
    created_at: str
    """When it was first stored (ISO 8601, UTC); an older entry's file time; '' if unknown."""
    access_count: int
    """How often ``read_namespace`` read it (persisted: it survives a restart)."""


class NamespaceStore(Protocol):
    """Full texts of large tool results, by reference."""

    def put(
        self,
        content: str,
        *,
        tool: str = "",
        args: Mapping[str, Any] | None = None,
        summary: str = "",
    ) -> str:
        """Store ``content`` (idempotent: the first call's tool, args and summary stay).

        Returns:
            Its reference.
        """
        ...

    def read(self, reference: str) -> str | None:
        """The full text a reference names, read by ``read_namespace``: one access counted.

        Returns:
            The text; None when no entry has it (nothing counted).

        Raises:
            NamespaceEntryError: The entry exists but is damaged (one line naming it).
        """
        ...

    def peek(self, reference: str) -> str | None:
        """The full text a reference names, without counting an access (windows showing it).

        Raises:
            NamespaceEntryError: The entry exists but is damaged (one line naming it).
        """
        ...

    def entry(self, reference: str) -> NamespaceEntry | None:
        """The whole entry a reference names; None when there is none.

        Raises:
            NamespaceEntryError: The entry exists but is damaged (one line naming it).
        """
        ...


def now_text() -> str:
    """The current time as ``created_at`` keeps it (ISO 8601, UTC, seconds)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def json_args(args: Mapping[str, Any] | None) -> dict[str, Any]:
    """A tool call's arguments as JSON keeps them (a value JSON cannot hold becomes its text)."""
    if not args:
        return {}
    loaded = json.loads(json.dumps(dict(args), default=str))
    return loaded if isinstance(loaded, dict) else {}


class ContentCache:
    """Texts by digest, bounded by their total UTF-8 size (oldest use evicted first).

    Not thread-safe: every namespace store guards it with its own lock.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.entries: OrderedDict[str, str] = OrderedDict()
        self.size = 0

    def get(self, digest: str) -> str | None:
        """The text of ``digest`` if it is held (it becomes the most recently used)."""
        found = self.entries.get(digest)
        if found is not None:
            self.entries.move_to_end(digest)
        return found

    def add(self, digest: str, content: str) -> None:
        """Hold ``content``, evicting the least recently used texts past ``max_bytes``."""
        size = len(content.encode("utf-8"))
        if size > self.max_bytes or digest in self.entries:
            return
        self.entries[digest] = content
        self.size += size
        while self.size > self.max_bytes:
            _, evicted = self.entries.popitem(last=False)
            self.size -= len(evicted.encode("utf-8"))


class FileNamespaceStore:
    """One JSON file per entry (``<digest>.json``) under ``root``, with an LRU in memory.

    A file holds ``{"reference", "tool", "args", "sha256", "created_at", "summary",
    "content"}``; ``<digest>.reads`` beside it gets one line per ``read_namespace`` read
    (appended, never rewritten: its line count is the entry's ``access_count``).

    Args:
        root: The directory of the entries (created on the first write).
        max_bytes: Bound of the in-memory LRU; the files are not bounded (they are small
            next to the topic files, which hold the same texts).
    """

    def __init__(self, root: Path, *, max_bytes: int = CACHE_BYTES) -> None:
        self.root = Path(root)
        self.cache = ContentCache(max_bytes)
        self._checked: set[str] = set()
        """Digests whose file was written or read back intact by this process."""
        self._lock = threading.Lock()

    def path_of(self, digest: str) -> Path:
        """The file of an entry."""
        return self.root / f"{digest}.json"

    def reads_path_of(self, digest: str) -> Path:
        """The file counting an entry's reads."""
        return self.root / f"{digest}{READS_SUFFIX}"

    def put(
        self,
        content: str,
        *,
        tool: str = "",
        args: Mapping[str, Any] | None = None,
        summary: str = "",
    ) -> str:
        """Store ``content`` and return its reference; a damaged file of it is written again."""
        full = content_digest(content)
        digest = full[:DIGEST_CHARS]
        reference = REFERENCE_PREFIX + digest
        with self._lock:
            if digest in self._checked:
                self.cache.add(digest, content)
                return reference
            path = self.path_of(digest)
            if path.exists():
                try:
                    self._load(path, digest)
                except NamespaceEntryError as error:
                    log.warning("%s; writing it again from the message", error)
                else:
                    self._checked.add(digest)
                    self.cache.add(digest, content)
                    return reference
            record = {
                "reference": reference,
                "tool": tool,
                "args": json_args(args),
                "sha256": full,
                "created_at": now_text(),
                "summary": summary,
                "content": content,
            }
            self.root.mkdir(parents=True, exist_ok=True)
            replace_durably(path, json.dumps(record, ensure_ascii=False).encode("utf-8"))
            self._checked.add(digest)
            self.cache.add(digest, content)
        return reference

    def read(self, reference: str) -> str | None:
        """The full text of ``reference`` (see :meth:`peek`), one read counted when found."""
        content = self.peek(reference)
        digest = digest_of(reference)
        if content is not None and digest is not None:
            self._count_read(digest)
        return content

    def peek(self, reference: str) -> str | None:
        """The full text of ``reference``: from memory, else from its file."""
        digest = digest_of(reference)
        if digest is None:
            return None
        with self._lock:
            cached = self.cache.get(digest)
            if cached is not None:
                return cached
            path = self.path_of(digest)
            if not path.exists():
                return None
            content = self._load(path, digest)
            self._checked.add(digest)
            self.cache.add(digest, content)
            return content

    def entry(self, reference: str) -> NamespaceEntry | None:
        """The entry of ``reference`` as its file holds it, with its read count."""
        digest = digest_of(reference)
        if digest is None:
            return None
        path = self.path_of(digest)
        with self._lock:
            if not path.exists():
                return None
            record = self._record(path, digest)
            reads = self.reads_path_of(digest)
            try:
                count = reads.read_bytes().count(b"\n") if reads.exists() else 0
            except OSError as error:
                log.warning("%s: read count not readable (%s)", reads, error)
                count = 0
            created = record.get("created_at")
            if not isinstance(created, str) or not created:
                created = _file_time(path)
        args = record.get("args")
        summary = record.get("summary")
        return NamespaceEntry(
            key=REFERENCE_PREFIX + digest,
            tool_name=str(record.get("tool") or ""),
            args=args if isinstance(args, dict) else {},
            content=record["content"],
            content_summary=summary if isinstance(summary, str) else "",
            created_at=created,
            access_count=count,
        )

    def _count_read(self, digest: str) -> None:
        """Append one line to the entry's read count (no fsync: a count, not the record)."""
        line = (now_text() + "\n").encode("ascii")
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.reads_path_of(digest), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
        except OSError as error:  # a full disk loses a count, never the answer
            log.warning("%s: read not counted (%s)", self.reads_path_of(digest), error)

    def _load(self, path: Path, digest: str) -> str:
        content: str = self._record(path, digest)["content"]
        return content

    def _record(self, path: Path, digest: str) -> dict[str, Any]:
        """The entry file's record, its content checked against ``digest``."""
        try:
            loaded = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError) as error:
            raise NamespaceEntryError(
                f"{path}: damaged namespace entry ({type(error).__name__})"
            ) from None
        record: dict[str, Any] = loaded if isinstance(loaded, dict) else {}
        content = record.get("content")
        if not isinstance(content, str) or not content_digest(content).startswith(digest):
            raise NamespaceEntryError(f"{path}: damaged namespace entry (content does not match)")
        return record


def _file_time(path: Path) -> str:
    """A file's modification time as ``created_at`` keeps it ('' when it cannot be read)."""
    try:
        stamp = path.stat().st_mtime
    except OSError:
        return ""
    return datetime.fromtimestamp(stamp, UTC).isoformat(timespec="seconds")


class InMemoryNamespaceStore:
    """A namespace in memory: for custom stores, dry runs (over ``base``) and tests.

    Reads are counted here, never in ``base`` (a dry run writes nothing).

    Args:
        base: A store read when this one lacks an entry (never written to).
        max_bytes: Bound of the texts kept.
    """

    def __init__(self, base: NamespaceStore | None = None, *, max_bytes: int = CACHE_BYTES) -> None:
        self.base = base
        self.cache = ContentCache(max_bytes)
        self.meta: dict[str, _Meta] = {}
        """Tool, args, summary and time of the entries put here (kept with their texts)."""
        self.reads: Counter[str] = Counter()
        self._lock = threading.Lock()

    def put(
        self,
        content: str,
        *,
        tool: str = "",
        args: Mapping[str, Any] | None = None,
        summary: str = "",
    ) -> str:
        """Keep ``content`` and return its reference."""
        digest = content_digest(content)[:DIGEST_CHARS]
        with self._lock:
            self.cache.add(digest, content)
            if digest in self.cache.entries and digest not in self.meta:
                self.meta[digest] = _Meta(tool, json_args(args), summary, now_text())
            if len(self.meta) > 2 * len(self.cache.entries) + 16:  # evicted texts' meta
                self.meta = {d: m for d, m in self.meta.items() if d in self.cache.entries}
        return REFERENCE_PREFIX + digest

    def read(self, reference: str) -> str | None:
        """The text of ``reference`` (see :meth:`peek`), one read counted here when found."""
        found = self.peek(reference)
        digest = digest_of(reference)
        if found is not None and digest is not None:
            with self._lock:
                self.reads[digest] += 1
        return found

    def peek(self, reference: str) -> str | None:
        """The text of ``reference`` held here, else in ``base``."""
        digest = digest_of(reference)
        if digest is None:
            return None
        with self._lock:
            found = self.cache.get(digest)
        if found is None and self.base is not None:
            return self.base.peek(reference)
        return found

    def entry(self, reference: str) -> NamespaceEntry | None:
        """The entry of ``reference``: ``base``'s (plus the reads counted here), else this one's."""
        digest = digest_of(reference)
        if digest is None:
            return None
        below = self.base.entry(reference) if self.base is not None else None
        with self._lock:
            content = self.cache.entries.get(digest)
            meta = self.meta.get(digest) or _Meta()
            count = self.reads[digest]
        if below is not None:
            return replace(below, access_count=below.access_count + count)
        if content is None:
            return None
        return NamespaceEntry(
            key=REFERENCE_PREFIX + digest,
            tool_name=meta.tool,
            args=dict(meta.args),
            content=content,
            content_summary=meta.summary,
            created_at=meta.created_at,
            access_count=count,
        )


@dataclass(frozen=True)
class _Meta:
    tool: str = ""
    args: dict[str, Any] = field(default_factory=dict)
    summary: str = ""
    created_at: str = ""
