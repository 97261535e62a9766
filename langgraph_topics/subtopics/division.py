"""Divide a topic grown past its limit into subtopics (seed 000 §4.5, §8).

The store hands each of the topic's messages to one child in one record (``split_topic``: no
message moves, none is copied); the parent keeps a brief over its children and the status
``split``, the children take its place in the registry with its status and score history, and
the message index attributes their messages to them without embedding anything again.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from langgraph_topics.errors import log_degraded
from langgraph_topics.retrieval.message_index import MessageIndex
from langgraph_topics.roles.native.text import indexed_text, message_text, truncate_utf8
from langgraph_topics.roles.native.topic_names import distinct_name
from langgraph_topics.roles.native.vectors import Matrix, embed_matrix
from langgraph_topics.roles.protocols import TopicInfo
from langgraph_topics.services import ThreadStores, TopicServices
from langgraph_topics.state.records import (
    StoredMessage,
    SubtopicPart,
    TopicMeta,
    TopicRecord,
    TopicStatus,
    TurnEvent,
)
from langgraph_topics.state.units import group_units
from langgraph_topics.stores.protocols import Embedder, SplittableTopicStore
from langgraph_topics.subtopics.proposals import proposed_parts
from langgraph_topics.subtopics.segments import contiguous_parts
from langgraph_topics.summaries.briefs import brief_card, write_brief
from langgraph_topics.summaries.card import SummaryCard

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Division:
    """What dividing one topic changed."""

    records: dict[str, TopicRecord]
    """The parent's new registry record and its children's, by id."""
    events: list[TurnEvent]
    """The division, and what of its follow-up writes failed (``degraded``)."""


def divide_topic(
    services: TopicServices,
    stores: ThreadStores,
    topics: Mapping[str, TopicRecord],
    topic_id: str,
    *,
    cap: int,
    reason: str,
) -> Division | None:
    """Divide ``topic_id`` into subtopics of at most ``cap`` tokens each, cut at its lulls.

    Args:
        services: The thread's services (token counter, embedder, brief writer).
        stores: The thread's stores, on the branch of the turn.
        topics: The registry.
        topic_id: The topic to divide (registered, not ``split`` or ``archived``).
        cap: The most tokens a subtopic starts with.
        reason: Why it is divided, for the event (``4,210 tokens over the 4,000 limit``).

    Returns:
        The records to register and the event; None when there is nothing to divide (a store
        without subtopics, a topic of one unit, or one that fits in one part).
    """
    store = stores.topic_store
    record = topics.get(topic_id)
    if not isinstance(store, SplittableTopicStore) or record is None:
        return None
    if record["status"] in ("split", "archived"):
        return None
    units = group_units(store.messages(topic_id))
    if len(units) < 2:
        return None
    count = services.token_counter
    sizes = [sum(count(message["content"]) for message in unit) for unit in units]
    # A model's parts follow the subject, not a size: each may fill what a topic may hold (the
    # limit, or what the provider refused), twice the cap of a cut at the lulls.
    proposal = proposed_parts(services.roles.splitter, units, 2 * cap, count)
    if proposal is not None:
        parts = [part.messages for part in proposal]
        given = [(part.name, part.brief) for part in proposal]
    else:
        vectors = _unit_vectors(stores.message_index, services.embedder, units)
        parts = contiguous_parts(units, vectors, sizes, cap)
        given = [("", "")] * len(parts)
    if len(parts) < 2:
        return None
    meta = store.meta(topic_id)
    taken = [other["name"] for other in topics.values()]
    specs, cards = _named_parts(services, record, meta["file"], parts, given, taken)
    created_at = parts[0][0].get("timestamp")
    child_ids = store.split_topic(topic_id, specs, created_at=created_at)
    status = record["status"]
    events: list[TurnEvent] = [
        {
            "kind": "subtopics",
            "topic_ids": [topic_id, *child_ids],
            "detail": f"{meta['name']} divided into {len(child_ids)} subtopics ({reason})",
        }
    ]
    try:
        _follow_up(stores, topic_id, meta, status, child_ids, specs, cards, services)
    except Exception as error:
        # The division itself is stored: the registry must follow it. What failed here is
        # derived data, which the next open mends (the message index levels with the store,
        # the topic index catches up with the briefs).
        log_degraded(log, f"subtopics of {topic_id} made, but a follow-up write failed", error)
        events.append(
            {
                "kind": "degraded",
                "topic_ids": [topic_id],
                "detail": f"subtopics of {topic_id}: briefs or indexes not written: {error}",
            }
        )
    records: dict[str, TopicRecord] = {}
    for child_id, spec in zip(child_ids, specs, strict=True):
        child_meta = store.meta(child_id)
        records[child_id] = {
            "id": child_id,
            "name": spec["name"],
            "status": status,
            "parent_id": topic_id,
            "scores": list(record["scores"]),
            "created_at": child_meta["created_at"],
            "last_active_at": record["last_active_at"],
            "message_count": child_meta["message_count"],
        }
    parent: TopicRecord = {
        **record,
        "status": "split",
        "children": list(child_ids),
        "message_count": 0,
    }
    parent.pop("low_rounds", None)
    records[topic_id] = parent
    return Division(records=records, events=events)


def _follow_up(
    stores: ThreadStores,
    topic_id: str,
    meta: TopicMeta,
    status: TopicStatus,
    child_ids: Sequence[str],
    specs: Sequence[SubtopicPart],
    cards: Sequence[SummaryCard | None],
    services: TopicServices,
) -> None:
    """What a division writes besides the store's record: cards, briefs and both indexes."""
    store = stores.topic_store
    for child_id, spec, card in zip(child_ids, specs, cards, strict=True):
        if card is not None:
            store.set_brief(child_id, spec["name"], spec["brief"], card=card)
    stores.message_index.level_with(
        {
            message_id: child
            for child, spec in zip(child_ids, specs, strict=True)
            for message_id in spec["message_ids"]
        }
    )
    parent_brief = _parent_brief(meta["brief"], specs, services.settings.brief_bytes)
    store.set_brief(topic_id, meta["name"], parent_brief)
    for child_id, spec in zip(child_ids, specs, strict=True):
        stores.topic_index.upsert(child_id, spec["name"], spec["brief"], status=status)
    stores.topic_index.upsert(topic_id, meta["name"], parent_brief, status="split")


def _unit_vectors(
    index: MessageIndex, embedder: Embedder, units: Sequence[Sequence[StoredMessage]]
) -> Matrix:
    """One unit-length vector per unit: the mean of its messages' indexed vectors.

    Split messages were embedded when they were split; a message the index lacks (a store
    written by an older version) is embedded now.
    """
    messages = [message for unit in units for message in unit]
    indexed = index.vectors()
    rows_of = [index.position.get(message["id"]) for message in messages]
    vectors: list[Matrix | None] = [
        indexed[row] if row is not None and row < len(indexed) else None for row in rows_of
    ]
    missing = [place for place, vector in enumerate(vectors) if vector is None]
    if missing:
        fresh = embed_matrix(embedder, [indexed_text(messages[place]) for place in missing])
        for row, place in enumerate(missing):
            vectors[place] = fresh[row]
    rows: list[Matrix] = []
    start = 0
    for unit in units:
        block = np.asarray(vectors[start : start + len(unit)], dtype=np.float32)
        start += len(unit)
        mean = block.mean(axis=0)
        norm = float(np.linalg.norm(mean))
        rows.append(mean / norm if norm > 0 else mean)
    return np.vstack(rows).astype(np.float32)


def _named_parts(
    services: TopicServices,
    record: TopicRecord,
    file: str,
    parts: Sequence[Sequence[StoredMessage]],
    given: Sequence[tuple[str, str]],
    taken: Sequence[str],
) -> tuple[list[SubtopicPart], list[SummaryCard | None]]:
    """A name and a brief for each part: the splitter's, or written from its own messages.

    A part whose brief cannot be written (a failing back end) is still named, so that the
    division still happens. No name repeats one of ``taken`` (the thread's), the parent's or a
    sibling's: such a part is named for what tells it from its siblings (see
    :func:`~langgraph_topics.roles.native.topic_names.distinct_name`).
    """
    specs: list[SubtopicPart] = []
    cards: list[SummaryCard | None] = []
    for place, (part, (given_name, given_brief)) in enumerate(
        zip(parts, given, strict=True), start=1
    ):
        card: SummaryCard | None = None
        if given_name and given_brief:
            # The splitter wrote this brief from exactly these messages (§6.4).
            card = brief_card(part, given_name, given_brief, services.token_counter)
            specs.append(
                {"name": given_name, "brief": given_brief, "message_ids": [m["id"] for m in part]}
            )
            cards.append(card)
            continue
        # No name given: a brief writer keeps a name it is told, and each part needs its own.
        info: TopicInfo = {
            "id": record["id"],
            "name": "",
            "brief": "",
            "status": record["status"],
            "file": file,
        }
        try:
            name, brief, card = write_brief(
                services.roles.brief_writer, info, part, services.token_counter
            )
        except Exception as error:
            log_degraded(log, f"brief of part {place} of {record['id']} not written", error)
            name, brief = "", ""
        specs.append({"name": name, "brief": brief, "message_ids": [m["id"] for m in part]})
        cards.append(card)
    texts = [[message_text(m) for m in part] for part in parts]
    used = [*taken, record["name"]]
    for place, spec in enumerate(specs):
        siblings = [text for other in texts[:place] + texts[place + 1 :] for text in other]
        spec["name"] = distinct_name(
            spec["name"] or record["name"],
            parts[place],
            used,
            contrast=siblings,
            avoid=[record["name"]],
        )
        used.append(spec["name"])
    return specs, cards


def _parent_brief(brief: str, specs: Sequence[SubtopicPart], brief_bytes: int) -> str:
    """The parent's brief over its children: their names first, then what it said before."""
    listing = "Subtopics: " + "; ".join(spec["name"] for spec in specs) + "."
    return truncate_utf8(f"{listing}\n{brief}" if brief else listing, brief_bytes)
