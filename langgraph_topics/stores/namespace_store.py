"""The tool-result namespace (seed 001 T2): full texts of large tool results, by reference.

The namespace is a cache, not the record: the topic files and the transcript keep every tool
result in full (the seed's case 4), so an entry that is lost, evicted or damaged is written
again from the message the next time the message is in view. Entries are content-addressed
(``namespace://tool/<first 16 hex of SHA-256>``), so storing the same text twice is one entry.

The embedded store keeps one JSON file per entry under the thread's directory (beside the
topic files), written whole or not at all, with a byte-bounded LRU of texts in memory. A
server store (LangGraph ``BaseStore``, a key-value service) implements the same protocol.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Protocol

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


class NamespaceEntryError(ValueError):
    """A stored entry cannot be read back (the message names the file and the problem)."""


class NamespaceStore(Protocol):
    """Full texts of large tool results, by reference."""

    def put(self, content: str, *, tool: str = "") -> str:
        """Store ``content`` (idempotent) and return its reference."""
        ...

    def read(self, reference: str) -> str | None:
        """The full text a reference names; None when no entry has it.

        Raises:
            NamespaceEntryError: The entry exists but is damaged (one line naming it).
        """
        ...


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

    def put(self, content: str, *, tool: str = "") -> str:
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
            record = {"reference": reference, "tool": tool, "sha256": full, "content": content}
            self.root.mkdir(parents=True, exist_ok=True)
            replace_durably(path, json.dumps(record, ensure_ascii=False).encode("utf-8"))
            self._checked.add(digest)
            self.cache.add(digest, content)
        return reference

    def read(self, reference: str) -> str | None:
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

    def _load(self, path: Path, digest: str) -> str:
        try:
            record = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError) as error:
            raise NamespaceEntryError(
                f"{path}: damaged namespace entry ({type(error).__name__})"
            ) from None
        content = record.get("content") if isinstance(record, dict) else None
        if not isinstance(content, str) or not content_digest(content).startswith(digest):
            raise NamespaceEntryError(f"{path}: damaged namespace entry (content does not match)")
        return content


class InMemoryNamespaceStore:
    """A namespace in memory: for custom stores, dry runs (over ``base``) and tests.

    Args:
        base: A store read when this one lacks an entry (never written to).
        max_bytes: Bound of the texts kept.
    """

    def __init__(self, base: NamespaceStore | None = None, *, max_bytes: int = CACHE_BYTES) -> None:
        self.base = base
        self.cache = ContentCache(max_bytes)
        self._lock = threading.Lock()

    def put(self, content: str, *, tool: str = "") -> str:
        """Keep ``content`` and return its reference."""
        digest = content_digest(content)[:DIGEST_CHARS]
        with self._lock:
            self.cache.add(digest, content)
        return REFERENCE_PREFIX + digest

    def read(self, reference: str) -> str | None:
        """The text of ``reference`` held here, else in ``base``."""
        digest = digest_of(reference)
        if digest is None:
            return None
        with self._lock:
            found = self.cache.get(digest)
        if found is None and self.base is not None:
            return self.base.read(reference)
        return found
