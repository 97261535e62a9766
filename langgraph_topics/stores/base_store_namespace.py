"""The tool-result namespace on a LangGraph ``BaseStore``: large results shared by workers.

The same protocol as ``namespace_store.FileNamespaceStore``, one item per entry instead of one
file: ``("langgraph_topics", <thread key>, "namespace")``, key the reference's digest, value
``{"reference", "tool", "args", "sha256", "created_at", "summary", "content"}`` where
``content``, ``args`` and ``summary`` are ASCII JSON texts (a ``jsonb`` column refuses NUL
characters and lone surrogates, which tool output may hold). Entries are content-addressed, so
putting one twice writes the same item; an entry that turns out damaged is written again from
the message the next time it is put. Items are never embedded (``index=False``).

Reads (``read_namespace``) are counted in a small item of their own under
``("langgraph_topics", <thread key>, "namespace_reads")`` (``{"count": n}``), so a read never
writes the text again; two workers reading the same entry at the same moment may count once.
Items written before ``args``, ``created_at`` and ``summary`` were kept load without them.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

from langgraph.store.base import BaseStore, Item, PutOp

from langgraph_topics.namespace.reference import (
    DIGEST_CHARS,
    REFERENCE_PREFIX,
    content_digest,
    digest_of,
)
from langgraph_topics.stores.base_store_topics import thread_namespace
from langgraph_topics.stores.namespace_store import (
    CACHE_BYTES,
    ContentCache,
    NamespaceEntry,
    NamespaceEntryError,
    json_args,
    now_text,
)

NAMESPACE_LABEL = "namespace"
READS_LABEL = "namespace_reads"
"""The sibling namespace of the read counts (a search of the entries never meets them)."""


class BaseStoreNamespaceStore:
    """A thread's tool-result namespace in a ``BaseStore``, with an LRU of texts in memory.

    Args:
        store: Any ``BaseStore`` (``PostgresStore``, the platform store, ``InMemoryStore``).
        thread_id: The conversation thread whose namespace this is.
        max_bytes: Bound of the in-memory LRU.
    """

    def __init__(self, store: BaseStore, thread_id: str, *, max_bytes: int = CACHE_BYTES) -> None:
        self.store = store
        self.thread_id = thread_id
        self.namespace = (*thread_namespace(thread_id), NAMESPACE_LABEL)
        self.reads_namespace = (*thread_namespace(thread_id), READS_LABEL)
        self.cache = ContentCache(max_bytes)
        self._written: set[str] = set()
        """Digests this view put or read back intact: known to be stored."""
        self._lock = threading.Lock()

    def put(
        self,
        content: str,
        *,
        tool: str = "",
        args: Mapping[str, Any] | None = None,
        summary: str = "",
    ) -> str:
        """Store ``content`` (one write the first time this view sees it) and return its reference.

        Raises:
            ValueError: ``content`` holds a lone surrogate (it has no UTF-8, so no digest).
        """
        full = content_digest(content)
        digest = full[:DIGEST_CHARS]
        reference = REFERENCE_PREFIX + digest
        with self._lock:
            if digest not in self._written:
                value = {
                    "reference": reference,
                    "tool": tool,
                    "args": json.dumps(json_args(args), ensure_ascii=True),
                    "sha256": full,
                    "created_at": now_text(),
                    "summary": json.dumps(summary, ensure_ascii=True),
                    "content": json.dumps(content, ensure_ascii=True),
                }
                self.store.batch([PutOp(self.namespace, digest, value, index=False)])
                self._written.add(digest)
            self.cache.add(digest, content)
        return reference

    def read(self, reference: str) -> str | None:
        """The full text of ``reference`` (see :meth:`peek`), one read counted when found."""
        content = self.peek(reference)
        digest = digest_of(reference)
        if content is not None and digest is not None:
            item = self.store.get(self.reads_namespace, digest)
            count = _count_of(item)
            self.store.batch(
                [PutOp(self.reads_namespace, digest, {"count": count + 1}, index=False)]
            )
        return content

    def peek(self, reference: str) -> str | None:
        """The full text of ``reference``: from memory, else from the store; None if absent.

        Raises:
            NamespaceEntryError: The item exists but is damaged (one line naming it).
        """
        digest = digest_of(reference)
        if digest is None:
            return None
        with self._lock:
            cached = self.cache.get(digest)
            if cached is not None:
                return cached
        item = self.store.get(self.namespace, digest)
        if item is None:
            return None
        try:
            content = self._content(item, digest)
        except NamespaceEntryError:
            with self._lock:
                self._written.discard(digest)  # the next put of the text writes it again
            raise
        with self._lock:
            self._written.add(digest)
            self.cache.add(digest, content)
        return content

    def entry(self, reference: str) -> NamespaceEntry | None:
        """The entry of ``reference`` as its item holds it, with its read count."""
        digest = digest_of(reference)
        if digest is None:
            return None
        item = self.store.get(self.namespace, digest)
        if item is None:
            return None
        content = self._content(item, digest)
        value = item.value
        created = value.get("created_at")
        if not isinstance(created, str) or not created:
            created = item.created_at.isoformat(timespec="seconds")
        return NamespaceEntry(
            key=REFERENCE_PREFIX + digest,
            tool_name=str(value.get("tool") or ""),
            args=_decoded(value.get("args"), dict) or {},
            content=content,
            content_summary=_decoded(value.get("summary"), str) or "",
            created_at=created,
            access_count=_count_of(self.store.get(self.reads_namespace, digest)),
        )

    def _content(self, item: Item, digest: str) -> str:
        """The text an item holds, checked against its digest."""
        where = f"namespace entry {digest} of thread {self.thread_id!r}"
        encoded = item.value.get("content") if isinstance(item.value, dict) else None
        try:
            content = json.loads(encoded) if isinstance(encoded, str) else None
        except ValueError:
            content = None
        if not isinstance(content, str):
            raise NamespaceEntryError(f"{where}: damaged (no readable content)")
        try:
            matches = content_digest(content).startswith(digest)
        except UnicodeEncodeError:
            matches = False
        if not matches:
            raise NamespaceEntryError(f"{where}: damaged (content does not match)")
        return content


def _count_of(item: Item | None) -> int:
    count = item.value.get("count") if item is not None else 0
    return count if isinstance(count, int) and count > 0 else 0


def _decoded(encoded: Any, kind: type) -> Any:
    """A field kept as a JSON text, when it decodes to ``kind`` (else None)."""
    try:
        value = json.loads(encoded) if isinstance(encoded, str) else None
    except ValueError:
        return None
    return value if isinstance(value, kind) else None
