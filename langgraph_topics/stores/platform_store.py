"""Topics in the platform store of a LangGraph deployment (``runtime.store``).

LangGraph Server (and ``langgraph dev``) hands every run the deployment's ``BaseStore``, as does
a graph compiled with ``store=...``. When a run has one and its context gives no services, its
topics live there (``BaseStoreTopicStore``), so every worker of the deployment reads the same
topics; the topic index and the retrieval index stay where the services keep them (a Chroma
directory or server, and a local cache of the retrieval index rebuilt from the topics).
``LANGGRAPH_TOPICS_STORE`` set to a profile (``embedded``, ``postgres``) keeps the topics there.

The module also holds the embed function ``langgraph.json`` gives the server's store index
(``embed_texts``): the package's offline embedder, so semantic search in the platform store
needs no model provider either.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from langgraph_topics.stores.embeddings import CachingEmbedder, UseEmbedder

if TYPE_CHECKING:
    from langgraph.store.base import BaseStore

    from langgraph_topics.services import ThreadStores, TopicServices
    from langgraph_topics.settings import Settings
    from langgraph_topics.stores.protocols import Embedder

STORE_ENV = "LANGGRAPH_TOPICS_STORE"
"""Set to a store profile to keep topics out of the platform store (unset: the platform's)."""
PLATFORM_CHOICES = ("", "platform")
"""Values of ``LANGGRAPH_TOPICS_STORE`` under which a run's platform store holds its topics."""
EMBEDDING_DIMENSIONS = 512
"""Size of the vectors of ``embed_texts`` (multilingual USE v3); ``langgraph.json``'s ``dims``."""
INDEX_FIELDS = ["$"]
"""What the store index embeds of an item put with ``index`` left out: all of it. The topic
store puts its records with ``index=False``: only items that ask for semantic search are."""


def platform_store_wanted(environ: Mapping[str, str] | None = None) -> bool:
    """Whether a run that has a platform store keeps its topics there.

    Yes unless ``LANGGRAPH_TOPICS_STORE`` names another profile (``embedded``, ``postgres``).
    """
    chosen = (os.environ if environ is None else environ).get(STORE_ENV, "")
    return chosen.strip().lower() in PLATFORM_CHOICES


def open_platform_thread_stores(
    settings: Settings, embedder: Embedder, store: BaseStore, thread_id: str
) -> ThreadStores:
    """The stores of a thread whose topics live in ``store``.

    The retrieval index under the thread's directory is a cache: opening it embeds what the
    topic store holds and it lacks (a new worker, a wiped data directory); so does a local
    topic index (``catch_up_topic_index``). Large tool results live in the shared store too.
    """
    from langgraph_topics.history.refined_turns import HISTORY_DIR, RefinedTurnLog
    from langgraph_topics.retrieval.message_index import open_message_index
    from langgraph_topics.services import (
        ThreadStores,
        index_collection_name,
        thread_directory,
    )
    from langgraph_topics.stores.base_store_namespace import BaseStoreNamespaceStore
    from langgraph_topics.stores.base_store_topics import BaseStoreTopicStore
    from langgraph_topics.stores.scratch_files import remove_abandoned_scratch
    from langgraph_topics.stores.topic_index import open_topic_index
    from langgraph_topics.stores.topic_index_catch_up import catch_up_topic_index

    root = thread_directory(settings.data_dir, thread_id)
    remove_abandoned_scratch(root)
    topic_store = BaseStoreTopicStore(store, thread_id)
    topic_index = open_topic_index(
        settings.data_dir, settings.chroma_url, embedder, index_collection_name(thread_id)
    )
    catch_up_topic_index(topic_index, topic_store)
    return ThreadStores(
        topic_store=topic_store,
        topic_index=topic_index,
        message_index=open_message_index(root / "retrieval", embedder, topic_store),
        namespace_store=BaseStoreNamespaceStore(
            store, thread_id, max_bytes=settings.namespace_cache_bytes
        ),
        refined_turns=RefinedTurnLog(root / HISTORY_DIR),
    )


_derived: dict[tuple[int, int], tuple[TopicServices, BaseStore, TopicServices]] = {}
_derived_lock = threading.Lock()


def platform_services(services: TopicServices, store: BaseStore) -> TopicServices:
    """``services`` with the topics of every thread in ``store``, derived once per pair.

    The copy shares the settings, roles and embedder; it opens each thread's stores once per
    process (its own cache), and per-run settings derived from it share those stores.
    """
    key = (id(services), id(store))
    with _derived_lock:
        found = _derived.get(key)
        # The pair is kept alive with the copy, so an id cannot be reused while it is cached.
        if found is not None:
            return found[2]
        derived = replace(
            services,
            open_stores=partial(
                open_platform_thread_stores, services.settings, services.embedder, store
            ),
            shared_store=store,
            _stores={},
            _lock=threading.Lock(),
        )
        _derived[key] = (services, store, derived)
        return derived


_embedder: CachingEmbedder | None = None
_embedder_lock = threading.Lock()


def embed_texts(texts: Sequence[str]) -> list[list[float]]:
    """Embed texts for the platform store's vector index (``langgraph.json`` ``store.index``).

    The package's default embedder (multilingual USE v3, offline, bundled weights): unit
    vectors of ``EMBEDDING_DIMENSIONS`` floats, one per text.
    """
    global _embedder
    with _embedder_lock:
        if _embedder is None:
            _embedder = CachingEmbedder(UseEmbedder())
        embedder = _embedder
    return embedder.embed(list(texts))


def index_config(embed: str) -> dict[str, Any]:
    """The ``store.index`` section of ``langgraph.json`` with ``embed`` as its embed function."""
    return {"embed": embed, "dims": EMBEDDING_DIMENSIONS, "fields": list(INDEX_FIELDS)}
