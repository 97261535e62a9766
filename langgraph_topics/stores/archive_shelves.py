"""Where archived topics' compressed summaries are filed, by month (seed 000 §4.8, §9).

Two shelves behind the ``TopicArchive`` methods of the topic stores:

* :class:`FileArchiveShelf`: ``topics/archived/YYYY-MM/<topic_id>.json`` under the thread's
  directory, each file replaced whole (a crash leaves the old file or the new one);
* :class:`BaseStoreArchiveShelf`: one item per topic in ``(..., <thread>, "archived")`` of a
  ``BaseStore``, its month beside it.

A summary is a filing, not the topic's status: whether a topic is archived is the registry's
word (the checkpointed state), so a shelf entry left by a review a crash cut short, or by a
restore, is ignored by every reader and replaced by the next archiving of that topic.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Protocol, cast

from langgraph.store.base import BaseStore

from langgraph_topics.state.records import ArchivedTopic
from langgraph_topics.stores.durable import fsync_directory, remove_file, replace_durably

logger = logging.getLogger(__name__)

ARCHIVED_DIR = "archived"
"""The shelf's directory under ``topics/`` (and its label in a ``BaseStore`` namespace)."""
_REQUIRED = ("topic_id", "name", "month", "archived_at", "summary")


def _entry(value: object) -> ArchivedTopic | None:
    """A shelf entry as read back; None when it is not one (logged by the caller)."""
    if not isinstance(value, dict) or not all(key in value for key in _REQUIRED):
        return None
    if not all(isinstance(value[key], str) for key in _REQUIRED[:-1]):
        return None
    return cast(ArchivedTopic, value)


class ArchiveShelf(Protocol):
    """Files archived topics' summaries by month."""

    def save(self, entry: ArchivedTopic) -> None:
        """File a summary, replacing any earlier filing of the topic."""
        ...

    def get(self, topic_id: str) -> ArchivedTopic | None:
        """A topic's filing, or None."""
        ...

    def entries(self) -> list[ArchivedTopic]:
        """Every filing, month by month."""
        ...

    def drop(self, topic_id: str) -> None:
        """Take a topic's filing off the shelf."""
        ...


def _by_month(entries: list[ArchivedTopic]) -> list[ArchivedTopic]:
    return sorted(entries, key=lambda entry: (entry["month"], entry["topic_id"]))


class FileArchiveShelf:
    """Archived summaries as ``<root>/YYYY-MM/<topic_id>.json`` files.

    Args:
        root: The shelf directory (``topics/archived`` of a thread); created when written.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def save(self, entry: ArchivedTopic) -> None:
        """File the summary under its month, replacing any earlier filing of the topic.

        The new file is written before older ones go, so a crash in between leaves two
        filings, of which :meth:`get` returns the newer.
        """
        month_dir = self.root / entry["month"]
        new = not month_dir.is_dir()
        month_dir.mkdir(parents=True, exist_ok=True)
        if new:
            fsync_directory(self.root)
        path = month_dir / f"{entry['topic_id']}.json"
        replace_durably(path, json.dumps(entry, ensure_ascii=False, indent=1).encode("utf-8"))
        for other in self._paths(entry["topic_id"]):
            if other != path:
                remove_file(other)

    def get(self, topic_id: str) -> ArchivedTopic | None:
        """The newest filing of a topic, or None."""
        found = [entry for path in self._paths(topic_id) if (entry := self._read(path))]
        return max(found, key=lambda entry: entry["archived_at"]) if found else None

    def entries(self) -> list[ArchivedTopic]:
        """Every filing, month by month (each topic once: its newest filing)."""
        newest: dict[str, ArchivedTopic] = {}
        for path in sorted(self.root.glob("*/*.json")) if self.root.is_dir() else []:
            entry = self._read(path)
            if entry is None:
                continue
            held = newest.get(entry["topic_id"])
            if held is None or held["archived_at"] < entry["archived_at"]:
                newest[entry["topic_id"]] = entry
        return _by_month(list(newest.values()))

    def drop(self, topic_id: str) -> None:
        """Take a topic's filings off the shelf (a restored topic)."""
        for path in self._paths(topic_id):
            remove_file(path)

    def _paths(self, topic_id: str) -> list[Path]:
        if not self.root.is_dir():
            return []
        return sorted(self.root.glob(f"*/{topic_id}.json"))

    def _read(self, path: Path) -> ArchivedTopic | None:
        try:
            entry = _entry(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            entry = None
        if entry is None:
            logger.warning("%s: not an archived topic summary; ignored", path)
        return entry


class BaseStoreArchiveShelf:
    """Archived summaries as items of a ``BaseStore`` namespace, one per topic.

    The value carries the summary as ASCII JSON text, as the topic records do: Postgres
    ``jsonb`` refuses NUL characters and lone surrogates, which message text may hold.

    Args:
        store: The ``BaseStore`` holding the thread.
        namespace: The thread's namespace (``base_store_topics.thread_namespace``).
    """

    def __init__(self, store: BaseStore, namespace: tuple[str, ...]) -> None:
        self.store = store
        self.namespace = (*namespace, ARCHIVED_DIR)

    def save(self, entry: ArchivedTopic) -> None:
        """File the summary (one put; the month rides beside it for listings)."""
        value = {"month": entry["month"], "entry": json.dumps(entry, ensure_ascii=True)}
        self.store.put(self.namespace, entry["topic_id"], value, index=False)

    def get(self, topic_id: str) -> ArchivedTopic | None:
        """The topic's filing, or None."""
        item = self.store.get(self.namespace, topic_id)
        return self._read(topic_id, item.value) if item is not None else None

    def entries(self) -> list[ArchivedTopic]:
        """Every filing, month by month."""
        found: list[ArchivedTopic] = []
        offset = 0
        while True:
            page = self.store.search(self.namespace, limit=500, offset=offset)
            for item in page:
                if item.namespace == self.namespace:
                    entry = self._read(item.key, item.value)
                    if entry is not None:
                        found.append(entry)
            if len(page) < 500:
                return _by_month(found)
            offset += len(page)

    def drop(self, topic_id: str) -> None:
        """Take a topic's filing off the shelf."""
        self.store.delete(self.namespace, topic_id)

    def _read(self, key: str, value: dict[str, Any]) -> ArchivedTopic | None:
        try:
            entry = _entry(json.loads(str(value.get("entry"))))
        except ValueError:
            entry = None
        if entry is None:
            logger.warning("archived topic %s: unreadable summary; ignored", key)
        return entry
