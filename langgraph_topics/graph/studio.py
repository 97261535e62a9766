"""The graphs that ``langgraph.json`` exports to LangGraph Studio and the LangGraph Server.

``topic_memory`` is the chat graph; ``topic_review`` reviews one of its threads
(``docs/review.md``): run it on the thread, and the thread's next state shows it.

It is compiled without a checkpointer or a store because the server brings both: its
checkpointer keeps the working set, its platform store (``runtime.store``) the topics
(``stores.platform_store``; ``LANGGRAPH_TOPICS_STORE=embedded`` keeps them in JSONL files
instead). ``langgraph.json`` gives the store's vector index the package's offline embedder. The
services (settings, indexes, role back ends) come from the environment on first use: the data
directory (the topic index and the retrieval cache) from ``LANGGRAPH_TOPICS_DATA_DIR``, the
budget from ``LANGGRAPH_TOPICS_BUDGET``, the models from ``LANGGRAPH_TOPICS_*_MODEL`` (none set:
the offline native back ends, so ``langgraph dev`` needs no model provider).

An assistant (or a single run) changes settings for its runs with a ``topic_memory`` object in
its context, or in ``config["configurable"]``; Studio draws the form from the context schema::

    client.assistants.create(
        "topic_memory",
        context={"topic_memory": {"budget_tokens": 1200, "language": "zh",
                                  "strong_model": "openai:gpt-4o",
                                  "cheap_model": "openai:gpt-4o-mini"}},
    )

Keys: ``budget_tokens``, ``language``, ``strong_model``, ``cheap_model``, ``role_models``,
``prompt_dir`` (``langgraph_topics.settings.RunSettings``); those left out keep the
environment's values. Every run shares the server's stores (each thread's opened once per
worker); role back ends are built once per distinct settings. An invalid setting fails the run,
before it writes anything, with one line naming it (``topic_memory.budget_tokens=100: must be
at least 250 tokens …``).

A run names its user in ``configurable.user_id`` (the server's authenticated user) or its
context's ``user_id``; with ``LANGGRAPH_TOPICS_MEMORY_SCOPE=user`` it works on that user's
thread and reads the user's other threads before it starts (``scope/graph_run.py``,
``docs/users.md``).
"""

from __future__ import annotations

from langgraph_topics.graph.builder import build_graph
from langgraph_topics.graph.review import build_review_graph

graph = build_graph(name="topic_memory")
"""The compiled topic-memory graph (input: chat ``messages`` and an optional ``mode``)."""

review_graph = build_review_graph(name="topic_review")
"""The review graph (input: an optional ``review_now``), run on a chat thread to review it.

The server runs one run of a thread at a time, so a review never overlaps a turn there.
"""

__all__ = ["graph", "review_graph"]
