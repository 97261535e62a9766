"""The tool-result namespace on a LangGraph ``BaseStore``: large results shared by workers.

The same protocol as ``namespace_store.FileNamespaceStore``, one item per entry instead of one
file: ``("langgraph_topics", <thread key>, "namespace")``, key the reference's digest, value
``{"reference", "tool", "sha256", "content"}`` where ``content`` is the text as ASCII JSON (a
``jsonb`` column refuses NUL characters and lone surrogates, which tool output may hold).
Entries are content-addressed, so putting one twice writes the same item; an entry that turns
out damaged is written again from the message the next time it is put. Items are never
embedded (``index=False``).
"""

from __future__ import annotations

import json
import threading

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
    NamespaceEntryError,
)

NAMESPACE_LABEL = "namespace"


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
        self.cache = ContentCache(max_bytes)
        self._written: set[str] = set()
        """Digests this view put or read back intact: known to be stored."""
        self._lock = threading.Lock()

    def put(self, content: str, *, tool: str = "") -> str:
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
                    "sha256": full,
                    "content": json.dumps(content, ensure_ascii=True),
                }
                self.store.batch([PutOp(self.namespace, digest, value, index=False)])
                self._written.add(digest)
            self.cache.add(digest, content)
        return reference

    def read(self, reference: str) -> str | None:
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
