"""The writes of a review: merge two topics, archive one, restore one, refresh a brief.

Each action writes the stores first and returns the registry records for the node to put in
the state; the review's checkpoint (one, when the run ends) then records them with the store's
new ranges. Why that order is crash-safe (invariants 1 and 5):

* the topic store's records are seen only through the checkpoint's ``store_ranges``: a merge
  or brief a crash cut off before the checkpoint is unseen, and the next review writes it again;
* the archive shelf and the indexes are derived data: what a crash left there disagrees with
  the registry at worst until the next review writes the same again, and no reader trusts them
  over the registry (an archived topic is one the registry says is archived).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langgraph_topics.errors import log_degraded
from langgraph_topics.review.day_digests import digested_days
from langgraph_topics.review.filing import archived_entry
from langgraph_topics.roles.topic_info import topic_info
from langgraph_topics.scoring import merged_usage
from langgraph_topics.services import ThreadStores, TopicServices
from langgraph_topics.state.records import ArchiveRecord, TopicRecord, TopicStatus
from langgraph_topics.stores.protocols import BranchedTopicStore, ReviewableTopicStore
from langgraph_topics.stores.seq_ranges import as_state
from langgraph_topics.stores.topic_records import parse_time
from langgraph_topics.summaries.briefs import write_brief
from langgraph_topics.summaries.card import DayDigest

log = logging.getLogger(__name__)


def reviewable(stores: ThreadStores) -> ReviewableTopicStore:
    """The thread's topic store as the review uses it.

    Raises:
        TypeError: A topic store without merges and an archive shelf (an application's own).
    """
    store = stores.topic_store
    if not isinstance(store, ReviewableTopicStore):
        raise TypeError(
            f"{type(store).__name__} cannot merge or archive topics (ReviewableTopicStore)"
        )
    return store


def written_ranges(stores: ThreadStores) -> dict[str, Any]:
    """The state update naming the store records the branch holds now (writes included).

    Every step that writes returns it, as the split does: the next step opens the stores on
    the state's ranges, and without the new ones it would read the branch without the writes.
    """
    store = stores.topic_store
    if not isinstance(store, BranchedTopicStore):
        return {}
    return {"store_ranges": as_state(store.visible_ranges())}


@dataclass(frozen=True)
class Rebriefed:
    """A topic's brief after a refresh, whether it changed, and whether its days did."""

    name: str
    changed: bool
    error: str | None = None
    digested: bool = False


def refresh_brief(
    services: TopicServices,
    stores: ThreadStores,
    topic_id: str,
    status: TopicStatus,
    *,
    since: int | None = None,
    today: str | None = None,
) -> Rebriefed:
    """Rewrite a topic's name and brief from all its messages with the brief writer.

    With ``since`` (how many of its messages the last review saw) and ``today``, the messages
    after those are also compressed day by day into the card (``review.day_digests``), in the
    same brief record: one append per topic and review. Nothing is written when name, brief and
    days come out as they were (a review run twice writes nothing); a failing writer keeps the
    previous brief and days (invariant 4).
    """
    store = stores.topic_store
    info = topic_info(store, topic_id, status)
    messages = store.messages(topic_id)
    previous = store.meta(topic_id).get("brief_card")
    old_days: list[DayDigest] = list(previous.get("days", [])) if previous else []
    writer = services.roles.brief_writer
    try:
        name, brief, card = write_brief(writer, info, messages, services.token_counter)
        days = old_days
        if since is not None and today is not None:
            count = services.token_counter
            days = digested_days(writer, info, messages, since, old_days, today, count)
    except Exception as error:
        log_degraded(log, f"brief writer failed for {topic_id}; keeping its brief", error)
        return Rebriefed(info["name"], changed=False, error=str(error))
    changed = (name, brief) != (info["name"], info["brief"])
    digested = days != old_days
    if not changed and not digested:
        return Rebriefed(name, changed=False)
    if not changed:  # the brief as it was, its card with the new days
        card = previous or card
    card = card.copy()
    if days:
        card["days"] = days
    store.set_brief(topic_id, name, brief, card=card)
    if changed:
        stores.topic_index.upsert(topic_id, name, brief, status=status)
    return Rebriefed(name, changed=changed, digested=digested)


def merged_scores(first: list[float], second: list[float], window: int) -> list[float]:
    """Both score histories as one, aligned on the newest: the better of the two each turn."""
    length = min(window, max(len(first), len(second)))
    padded = [[0.0] * (length - len(s[-length:])) + s[-length:] for s in (first, second)]
    return [max(a, b) for a, b in zip(*padded, strict=True)]


def merge(
    services: TopicServices,
    stores: ThreadStores,
    keep: TopicRecord,
    retire: TopicRecord,
) -> TopicRecord:
    """Merge ``retire`` into ``keep``: its messages, its history and its activity.

    The store writes one ``merged`` record (no message is copied: each id stays stored once),
    the retrieval index files the retired topic's messages under the kept topic, the topic
    index drops the retired brief, and the kept topic's brief is written again from both
    topics' messages.

    Returns:
        The kept topic's registry record (the retired one leaves the registry).
    """
    store = reviewable(stores)
    moved = stores.topic_store.messages(retire["id"])
    store.merge_topics(retire["id"], keep["id"])
    stores.message_index.add(moved, [keep["id"]] * len(moved))
    stores.topic_index.remove(retire["id"])
    status: TopicStatus = "active" if "active" in (keep["status"], retire["status"]) else "dormant"
    rebriefed = refresh_brief(services, stores, keep["id"], status)
    meta = stores.topic_store.meta(keep["id"])
    merged: TopicRecord = {
        **keep,
        "name": rebriefed.name,
        "status": status,
        "scores": merged_scores(keep["scores"], retire["scores"], services.settings.score_window),
        "last_active_at": _later(keep["last_active_at"], retire["last_active_at"]),
        "message_count": meta["message_count"],
    }
    merged.pop("low_rounds", None)  # a new stretch for the merged topic
    usage = merged_usage(keep, retire)
    if usage:
        merged["usage"] = usage
    else:
        merged.pop("usage", None)
    return merged


def _later(first: str, second: str) -> str:
    """The later of two ISO-8601 times (the first when either is unreadable)."""
    one, two = parse_time(first), parse_time(second)
    return second if one is not None and two is not None and two > one else first


def archive(
    services: TopicServices, stores: ThreadStores, topic: TopicRecord, reason: str, now: datetime
) -> tuple[TopicRecord, ArchiveRecord]:
    """File a topic's compressed summary by month and take it out of normal activation.

    Returns:
        Its registry record (status ``archived``) and what the review reports of it.
    """
    store = reviewable(stores)
    meta = stores.topic_store.meta(topic["id"])
    entry = archived_entry(
        meta,
        stores.topic_store.messages(topic["id"]),
        reason=reason,
        now=now,
        count_tokens=services.token_counter,
    )
    store.save_archive(entry)
    stores.topic_index.set_status(topic["id"], "archived")
    record: ArchiveRecord = {"topic_id": topic["id"], "reason": reason, "month": entry["month"]}
    return {**topic, "status": "archived"}, record


def restore(stores: ThreadStores, topic: TopicRecord, now: datetime) -> TopicRecord:
    """Bring an archived topic back as dormant, its activity dated ``now``.

    Dated now so that the next review does not archive it again at once; dormant so that the
    next turns activate it only when it is relevant. Its shelf entry goes once the state says
    so (``TopicMemory.restore``); a stale one is ignored meanwhile.
    """
    stores.topic_index.set_status(topic["id"], "dormant")
    return {**topic, "status": "dormant", "last_active_at": now.isoformat()}
