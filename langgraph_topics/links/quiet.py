"""A link written on the side of a turn: never the turn's failure, nearly free once known.

Bookkeeping links topics on every chat turn that quotes several of them. ``TopicStore.link``
is a no-op for a link it holds, but it takes the store's lock and catches up (a database
read for the ``BaseStore`` profile) to find that out; so each store object remembers here the
links it was given, and a link asked for again costs a set lookup. A store object lives as
long as its branch view (``TopicServices.stores``): another branch is another object, asked
once more.
"""

from __future__ import annotations

import errno
import logging
import threading
import weakref

from langgraph_topics.errors import first_line
from langgraph_topics.stores.protocols import TopicStore

log = logging.getLogger(__name__)

Link = tuple[str, str, str]
"""``(from_id, to_id, kind)``."""

_given: weakref.WeakKeyDictionary[TopicStore, set[Link]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def link_once(store: TopicStore, from_id: str, to_id: str, kind: str) -> bool:
    """Record a link unless ``store`` was given it already; whether the store was asked.

    A topic that is gone (merged or deleted meanwhile) or a topic linked to itself is skipped
    with a debug line; a store that fails to write is a warning, and asked again next time: a
    link is never worth a turn. A full disk alone is raised: the turn's checkpoint would meet
    it next, and its one error line then names it at once.
    """
    link = (from_id, to_id, kind)
    if _known(store, link):
        return False
    try:
        store.link(from_id, to_id, kind)
    except (KeyError, ValueError) as error:
        log.debug("link %s -> %s (%s) skipped: %s", from_id, to_id, kind, error)
    except Exception as error:  # a read-only directory, a lost database: on without the link
        if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
            raise
        log.warning("link %s -> %s (%s) not written: %s", from_id, to_id, kind, first_line(error))
        return True
    _remember(store, link)
    return True


def _known(store: TopicStore, link: Link) -> bool:
    try:
        given = _given.get(store)
    except TypeError:  # a store that cannot be weakly referenced or hashed: always asked
        return False
    return given is not None and link in given


def _remember(store: TopicStore, link: Link) -> None:
    with _lock:
        try:
            _given.setdefault(store, set()).add(link)
        except TypeError:
            pass
