"""A split worked out before anything is written: the splitter's plan and the new briefs.

Seed 000 §4.4 / §6.4: the splitter assigns the older unsplit messages to topics and every
touched topic's brief is rewritten at once. Both are model calls (the slow part of a split,
12–30 s with a strong model); the writes that follow take milliseconds. Keeping the two
apart lets the model calls run where no user waits for them (``splitting.background``),
while the writes stay in the split node, checkpointed and crash-safe as before.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from langgraph_topics.errors import log_degraded
from langgraph_topics.retrieval.message_index import MessageIndex
from langgraph_topics.roles.llm.brief_writer import LlmBriefWriter
from langgraph_topics.roles.protocols import NewTopic, SplitPlan, Splitter, TopicInfo
from langgraph_topics.roles.topic_info import topic_infos
from langgraph_topics.runtime_protocols import takes_brief_vectors, takes_sentence_vectors
from langgraph_topics.services import ThreadStores, TopicServices
from langgraph_topics.settings import Settings
from langgraph_topics.splitting.new_subjects import NEW_SUBJECT_KEY, open_new_subjects
from langgraph_topics.state.records import StoredMessage, TopicRecord, TurnEvent
from langgraph_topics.state.units import group_units, unit_in_store
from langgraph_topics.stores.protocols import TopicIndex, TopicStore
from langgraph_topics.stores.topic_index import stored_or_none
from langgraph_topics.summaries.briefs import brief_card, write_brief
from langgraph_topics.summaries.card import SummaryCard

log = logging.getLogger(__name__)

Destination = tuple[str, str]
"""``("topic", topic_id)`` or ``("new", key)``."""

UNIT_QUERY_CHARS = 2000
"""Text of an exchange sent to the topic index to find its nearest topics (a long tool
result says nothing more about the subject past its start)."""

Brief = tuple[str, str, SummaryCard]
"""``(name, brief, card)`` as a brief writer returns them."""


@dataclass
class PreparedSplit:
    """Where each unit of a split goes, and the briefs its topics get, before any write."""

    units: list[list[StoredMessage]]
    destinations: list[Destination]
    """One per unit, in order (units are never separated)."""
    new_topics: dict[str, NewTopic]
    """The new topics the plan asked for, by key."""
    briefs: dict[Destination, Brief | None] = field(default_factory=dict)
    """Each destination's new brief; ``None`` keeps the topic's previous one (a writer failed)."""
    events: list[TurnEvent] = field(default_factory=list)
    """What had to be mended or degraded while planning."""
    topic_counts: dict[str, int] = field(default_factory=dict)
    """Messages each existing destination held when the briefs were written."""
    last_split_id: str | None = None
    """The newest split message when the plan was made (a later split makes it stale)."""

    @property
    def message_ids(self) -> list[str]:
        """The split messages, in conversation order."""
        return [m["id"] for unit in self.units for m in unit]

    @property
    def candidates(self) -> list[StoredMessage]:
        """The split messages themselves, in conversation order."""
        return [m for unit in self.units for m in unit]

    def grouped(self) -> dict[Destination, list[StoredMessage]]:
        """Each destination's messages, destinations in the order they first appear."""
        grouped: dict[Destination, list[StoredMessage]] = {}
        for unit, destination in zip(self.units, self.destinations, strict=True):
            grouped.setdefault(destination, []).extend(unit)
        return grouped


def resolve_plan(
    plan: SplitPlan, units: Sequence[Sequence[StoredMessage]], known_topics: set[str]
) -> tuple[list[Destination], list[str]]:
    """One destination per unit, whatever the splitter returned; plus what had to be mended.

    A unit goes where its first validly assigned message goes (units are never separated).
    Unknown topic ids, unknown new-topic keys and unassigned units are mended: such a unit
    follows the unit before it (conversation continuity), or opens an "unsorted" topic.
    """
    new_keys = {topic["key"] for topic in plan["new_topics"]}
    by_message: dict[str, Destination] = {}
    problems: list[str] = []
    for assignment in plan["assignments"]:
        destination: Destination | None = None
        if assignment["topic_id"] is not None:
            if assignment["topic_id"] in known_topics:
                destination = ("topic", assignment["topic_id"])
            else:
                problems.append(f"unknown topic id {assignment['topic_id']!r}")
        elif assignment["new_key"] is not None:
            if assignment["new_key"] in new_keys:
                destination = ("new", assignment["new_key"])
            else:
                problems.append(f"unknown new-topic key {assignment['new_key']!r}")
        if destination is None:
            continue
        for message_id in assignment["message_ids"]:
            if message_id in by_message:
                problems.append(f"message {message_id} assigned twice (first kept)")
            else:
                by_message.setdefault(message_id, destination)
    destinations: list[Destination] = []
    for unit in units:
        chosen = next((by_message[m["id"]] for m in unit if m["id"] in by_message), None)
        if chosen is None:
            problems.append(f"unit starting at {unit[0]['id']} unassigned")
            chosen = destinations[-1] if destinations else ("new", "__unsorted__")
        destinations.append(chosen)
    return destinations, problems


def prepare_split(
    services: TopicServices,
    stores: ThreadStores,
    topics: Mapping[str, TopicRecord],
    candidates: Sequence[StoredMessage],
    last_split_id: str | None,
    new_topic_starts: Collection[str] = (),
) -> PreparedSplit:
    """Ask the splitter where ``candidates`` go and the brief writers for the touched briefs.

    Reads the stores, writes nothing. A failing splitter sends every unit to one "unsorted"
    topic; a failing brief writer keeps that topic's previous brief (invariant 4: one step
    degrades, never the turn). An exchange holding one of ``new_topic_starts`` (the index
    window's new-topic verdicts) opens a new topic whatever the splitter said.
    """
    store = stores.topic_store
    units = group_units(candidates)
    infos = topic_infos(dict(topics), store)
    _mark_latest_unit(infos, store, last_split_id)
    infos = candidate_topics(infos, units, stores.topic_index, services.settings)
    events: list[TurnEvent] = []
    try:
        plan = _plan(services.roles.splitter, units, infos, stores.topic_index)
    except Exception as error:  # a failing back end must not lose the turn
        log_degraded(log, "splitter failed; every unit falls back to one unsorted topic", error)
        events.append({"kind": "degraded", "detail": f"splitter failed: {error}"})
        plan = {"assignments": [], "new_topics": []}
    destinations, problems = resolve_plan(plan, units, {i["id"] for i in infos})
    if problems:
        events.append(
            {
                "kind": "degraded",
                "detail": "split plan mended: "
                + "; ".join(problems[:5])
                + (f" (+{len(problems) - 5} more)" if len(problems) > 5 else ""),
            }
        )
    new_topics = {t["key"]: t for t in plan["new_topics"]}
    opened = open_new_subjects(units, destinations, new_topics, set(new_topic_starts))
    if opened:
        events.append(
            {
                "kind": "split",
                "detail": "new topic confirmed by the index window for " + ", ".join(opened),
            }
        )
    prepared = PreparedSplit(
        units=[list(unit) for unit in units],
        destinations=destinations,
        new_topics=new_topics,
        events=events,
        last_split_id=last_split_id,
    )
    _write_briefs(services, store, prepared, stores.message_index)
    return prepared


def _plan(
    splitter: Splitter,
    units: Sequence[Sequence[StoredMessage]],
    infos: Sequence[TopicInfo],
    index: TopicIndex,
) -> SplitPlan:
    """The splitter's plan, with the index's vectors of the briefs where they are its model's."""
    embedder = getattr(index, "embedder", None)
    if takes_brief_vectors(splitter) and embedder is not None and splitter.embedder is embedder:
        return splitter.split_with_briefs(units, infos, stored_brief=stored_or_none(index))
    return splitter.split(units, infos)


def _write_briefs(
    services: TopicServices,
    store: TopicStore,
    prepared: PreparedSplit,
    message_index: MessageIndex | None = None,
) -> None:
    """Every touched topic's brief as it will read once the split's messages are appended.

    Model-backed writers run in parallel: each is one call of a few seconds, and a split that
    touches nine topics would otherwise wait for nine of them one after another. In-process
    ones (native) run one after another: threads would only share the interpreter.
    """
    jobs: dict[Destination, tuple[TopicInfo, list[StoredMessage]]] = {}
    counter = services.token_counter
    for destination, messages in prepared.grouped().items():
        kind, key = destination
        if kind == "new":
            spec = prepared.new_topics.get(key, {"key": key, "name": "", "brief": ""})
            if spec["name"] and spec["brief"]:
                # The splitter wrote this new topic's brief from exactly these messages (§6.4).
                card = brief_card(messages, spec["name"], spec["brief"], counter)
                prepared.briefs[destination] = (spec["name"], spec["brief"], card)
                continue
            # What the store will hold once the topic is created (the writers read name and
            # brief only; the id is the plan's key until then).
            # A topic the index window confirmed has no name yet: its writer gives it one.
            unnamed = "" if key.startswith(NEW_SUBJECT_KEY) else "Unsorted"
            info: TopicInfo = {
                "id": key,
                "name": spec["name"] or unnamed,
                "brief": spec["brief"],
                "status": "active",
                "file": "",
            }
            jobs[destination] = (info, list(messages))
        else:
            prepared.topic_counts[key] = store.meta(key)["message_count"]
            jobs[destination] = (_stored_info(store, key), [*store.messages(key), *messages])

    stored = _stored_vectors(services.roles.brief_writer, message_index)

    def brief_for(destination: Destination) -> Brief | None:
        info, messages = jobs[destination]
        try:
            return write_brief(services.roles.brief_writer, info, messages, counter, stored)
        except Exception as error:
            label = destination[1] if destination[0] == "topic" else f"new topic {info['name']}"
            log_degraded(log, f"brief writer failed for {label}; keeping the previous brief", error)
            prepared.events.append(
                {"kind": "degraded", "detail": f"brief for {label} kept: {error}"}
            )
            return None

    order = list(jobs)
    if len(order) > 1 and isinstance(services.roles.brief_writer, LlmBriefWriter):
        with ThreadPoolExecutor(max_workers=min(len(order), 8)) as pool:
            written = list(pool.map(brief_for, order))
    else:
        written = [brief_for(d) for d in order]
    prepared.briefs.update(zip(order, written, strict=True))


def _stored_vectors(
    writer: object, index: MessageIndex | None
) -> Callable[[Sequence[str]], Mapping[str, npt.NDArray[np.float32]]] | None:
    """The index's vectors by message id for a writer of its embedder, best effort (else None).

    A stored vector only saves an embedding: an index that cannot answer costs the writer
    that embedding, never the brief.
    """
    if index is None or not takes_sentence_vectors(writer) or writer.embedder is not index.embedder:
        return None

    def stored(message_ids: Sequence[str]) -> Mapping[str, npt.NDArray[np.float32]]:
        try:
            return index.stored_vectors(message_ids)
        except Exception as error:  # the writer embeds these sentences instead
            log.debug("message index vectors unavailable: %s", error)
            return {}

    return stored


def candidate_topics(
    infos: list[TopicInfo],
    units: Sequence[Sequence[StoredMessage]],
    index: TopicIndex,
    settings: Settings,
) -> list[TopicInfo]:
    """The topics the splitter is shown: all of them while few, else the likely ones.

    A thread of 500 topics listed them all (about 285 tokens each: 143k tokens, more than a
    128k-context model takes). Past ``split_topic_candidates`` the splitter sees the active
    topics, the one the last split ended on, and the nearest others to each exchange by the
    topic index (seed 000 §3: the index is how dormant topics are found), in registry order.
    """
    limit = settings.split_topic_candidates
    if len(infos) <= limit:
        return infos
    chosen = {i["id"] for i in infos if i["status"] == "active" or "latest_unit" in i}
    known = {i["id"] for i in infos}
    per_unit = max(1, min(3, limit // max(1, len(units))))
    for unit in units:
        if len(chosen) >= limit:
            break
        text = " ".join(m["content"] for m in unit)[:UNIT_QUERY_CHARS]
        try:
            hits = index.search(text, k=per_unit + 1)
        except Exception as error:  # the index is derived data: the active topics still serve
            log_degraded(log, "topic index search failed; the splitter sees fewer topics", error)
            break
        chosen.update(topic_id for topic_id, _ in hits[: per_unit + 1] if topic_id in known)
    return [i for i in infos if i["id"] in chosen]


def _stored_info(store: TopicStore, topic_id: str) -> TopicInfo:
    meta = store.meta(topic_id)
    return {
        "id": topic_id,
        "name": meta["name"],
        "brief": meta["brief"],
        "status": "active",
        "file": meta["file"],
    }


def _mark_latest_unit(infos: list[TopicInfo], store: TopicStore, message_id: str | None) -> None:
    """Give the topic holding the newest split message that message's unit (``latest_unit``).

    A split only sees the messages it moves; without the unit before them, the first of them
    could not continue the subject the previous split ended on.
    """
    if not message_id:
        return
    holder = store.locate(message_id)
    for info in infos:
        if info["id"] == holder:
            unit = unit_in_store(store, message_id)
            if unit:
                info["latest_unit"] = unit
            return


def still_valid(
    prepared: PreparedSplit,
    candidates: Sequence[StoredMessage],
    topics: Mapping[str, TopicRecord],
    store: TopicStore,
    last_split_id: str | None,
) -> str | None:
    """Why ``prepared`` no longer fits the thread (``None``: it does, and may be written).

    Between planning and writing, turns only add messages at the end of the working set, so
    a plan stays right while its messages are still the oldest unsplit ones and the topics it
    wrote briefs for hold what they held then. A review, an import or another split in
    between changes one of those, and the plan is dropped (its messages stay unsplit: the
    next split plans them again).
    """
    ids = prepared.message_ids
    if [m["id"] for m in candidates[: len(ids)]] != ids:
        return "its messages are no longer the oldest unsplit ones"
    if last_split_id != prepared.last_split_id:
        return "another split ran since"
    for destination in prepared.destinations:
        kind, topic_id = destination
        if kind != "topic":
            continue
        record = topics.get(topic_id)
        if record is None or record["status"] in ("archived", "split"):
            return f"topic {topic_id} is no longer open"
        if topic_id in prepared.topic_counts and (
            store.meta(topic_id)["message_count"] != prepared.topic_counts[topic_id]
        ):
            return f"topic {topic_id} changed since"
    return None
