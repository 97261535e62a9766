"""Search the topic index and activate topics by rank (seed 000 §4.1 step 5, §4.7, §6.3)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime

from langgraph_topics.activation.archived_recall import named_archived
from langgraph_topics.activation.dated_topics import dated_topics, held_in, topic_spans
from langgraph_topics.activation.grey import activation_quota, candidate_threshold
from langgraph_topics.activation.hierarchy import through_children
from langgraph_topics.activation.index_window import candidate_count, index_window
from langgraph_topics.errors import log_degraded
from langgraph_topics.nodes.recall_cue import latest_user_text
from langgraph_topics.retrieval.evidence import UNSPLIT_GROUP
from langgraph_topics.retrieval.period_evidence import asked_periods_of
from langgraph_topics.retrieval.related_terms import query_expansion
from langgraph_topics.roles.protocols import (
    IndexRouting,
    RoutedTopic,
    TopicInfo,
    WindowIndexRouter,
)
from langgraph_topics.roles.topic_info import topic_info
from langgraph_topics.scope.run_scope import scope_quotes_of
from langgraph_topics.scoring import archive_tier
from langgraph_topics.services import TopicContext, TopicServices, services_of, thread_id_of
from langgraph_topics.state.records import ActivationRequest, AskedPeriod, TopicRecord, TurnEvent
from langgraph_topics.state.schema import TopicState
from langgraph_topics.state.working_set import stored_view, unsplit_messages
from langgraph_topics.stores.protocols import ReviewableTopicStore, TopicStore
from langgraph_topics.subtopics.families import prior_families

log = logging.getLogger(__name__)

DEEP_SEARCH_EXPANSION = True
"""Whether a deep search (recall cue, date query) looks for related terms too."""
MAX_NEW_TOPIC_HINTS = 20
"""New-topic verdicts kept for the next split at most (the newest): one per user turn, and
a split moves the hinted messages once they are older than the last 20."""


def evidence_topics(
    services: TopicServices,
    thread_id: str,
    state: TopicState,
    query: str,
    k: int,
    *,
    expand: bool = False,
) -> list[tuple[str, float]]:
    """Topics holding the thread's best messages for ``query``, each with its best relevance.

    A whole-thread search of the retrieval index (seed 004 §3): milliseconds, nothing embedded
    but the query. ``expand``: the terms the thread relates to the query's count too, weighing
    less (``retrieval/related_terms.py``).
    """
    stores = services.branch_stores(thread_id, state)
    working = stored_view(state["messages"])
    unsplit = unsplit_messages(working, stores.topic_store)
    families = prior_families(state.get("topics") or {})
    index = stores.message_index
    periods = asked_periods_of(working, services.clock().date(), query)
    expansion = query_expansion(index, query) if expand else None
    evidence = services.scorer.score(
        index, query, unsplit, families, periods=periods, expansion=expansion
    )
    found: dict[str, float] = {}
    for position in evidence.top(5 * k):
        topic_id = evidence.group_of(position)
        if topic_id != UNSPLIT_GROUP and topic_id not in found:
            found[topic_id] = float(evidence.relevance[position])
    return list(found.items())


def period_topics(
    periods: list[AskedPeriod],
    topics: dict[str, TopicRecord],
    store: TopicStore,
    days: Mapping[str, Sequence[str]],
    k: int,
) -> list[str]:
    """The ``k`` dormant or archived topics discussed in a date query's periods.

    ``days``: the store's time index. Those with messages on the asked days first, newest
    first (``dated_topics``).
    """
    if not periods:
        return []
    archive = store.archive_entries() if isinstance(store, ReviewableTopicStore) else []
    return dated_topics(periods, topics, topic_spans(days, archive), days)[:k]


def activate(state: TopicState, runtime: Runtime[TopicContext]) -> dict[str, Any]:
    """Activate the best dormant topics for the pending request (or weak results).

    Only the topics activated here lack a result this turn, so the fan-out that follows calls
    the topic window for them alone; earlier results are kept and reused.
    """
    services = services_of(runtime)
    settings = services.settings
    thread_id = thread_id_of(runtime)
    stores = services.branch_stores(thread_id, state)
    request: ActivationRequest = state.get("activation") or {
        "query": latest_user_text(state),
        "reason": "weak_results",
        "deep": False,
    }
    topics = dict(state.get("topics") or {})
    active_count = sum(1 for t in topics.values() if t["status"] == "active")
    # Seed 000 §4.7: as many candidates as the rank quota can take, with room to choose.
    k = candidate_count(active_count, settings, deep=request["deep"])
    dormant = {t for t, record in topics.items() if record["status"] == "dormant"}
    if not request["deep"]:
        # Archive-tier topics wait for an explicit request (a recall cue's deep search), as
        # archived ones do (seed 000 §4.8, seed 004 §2.2).
        sleeping = {t: topics[t] for t in dormant}
        dormant -= archive_tier(sleeping, services.clock(), settings.score_decay_days)
    # A hit on a topic divided into subtopics goes to its subtopics (they hold its messages).
    hits = through_children(stores.topic_index.search(request["query"], k=k + active_count), topics)
    similarity = {topic_id: score for topic_id, score in hits if topic_id in dormant}
    # An archived topic is offered only when a recall cue names it (an explicit request).
    named = named_archived(request["query"], topics) if request["reason"] == "recall_cue" else []
    # A date query offers the sleeping topics discussed in its period, archived ones included.
    periods = request.get("periods") or []
    days = stores.topic_store.time_index() if periods else {}
    dated = period_topics(periods, topics, stores.topic_store, days, k)
    explicit = list(dict.fromkeys([*named, *dated]))
    if explicit:
        wide = stores.topic_index.search(request["query"], k=len(topics), exclude_status=())
        found = dict(wide)
        for topic_id in explicit:
            similarity[topic_id] = max(similarity.get(topic_id, 0.0), found.get(topic_id, 0.0))
    offered = dormant | set(explicit)
    # The briefs describe a topic; the message index finds the one message that answers.
    # A deep search (a recall cue: the user says something is missing) also looks for the
    # terms this thread relates to the question's.
    deep = request["deep"] and DEEP_SEARCH_EXPANSION
    for topic_id, score in evidence_topics(
        services, thread_id, state, request["query"], k, expand=deep
    ):
        if topic_id in offered:
            similarity[topic_id] = max(score, similarity.get(topic_id, 0.0))
    ranked_ids = sorted(similarity, key=lambda t: -similarity[t])[:k]
    ranked_ids += [topic_id for topic_id in explicit if topic_id not in ranked_ids]
    candidates: list[tuple[TopicInfo, float]] = []
    missing: list[str] = []
    for topic_id in ranked_ids:
        try:
            status = topics[topic_id]["status"]
            candidates.append(
                (topic_info(stores.topic_store, topic_id, status), similarity[topic_id])
            )
        except KeyError:
            # Registered and indexed, but its file is gone (removed by hand, another data
            # directory): it cannot be read, so it is not offered; the turn goes on.
            missing.append(topic_id)
    kind = "deep" if request["deep"] else "normal"
    events: list[TurnEvent] = [
        {
            "kind": "index_search",
            "reason": request["reason"],
            "topic_ids": [info["id"] for info, _ in candidates],
            "detail": f"{len(candidates)} dormant candidates, {kind} search"
            + (f" ({len(named)} archived, named by the cue)" if named else "")
            + (f" ({len(dated)} discussed in the asked period)" if dated else ""),
        }
    ]
    if missing:
        log.warning("topics %s are not in the topic store; not activated", ", ".join(missing))
        events.append(
            {
                "kind": "degraded",
                "topic_ids": missing,
                "detail": "unknown topic: not in this data directory's topic store",
            }
        )
    try:
        routing = _route(services, stores.topic_store, topics, request, candidates)
    except Exception as error:
        log_degraded(log, "index router failed; ranking by index similarity", error)
        events.append({"kind": "degraded", "detail": f"index router failed: {error}"})
        routing = {
            "topics": [
                RoutedTopic(topic_id=i["id"], relevance=s, reason="index similarity")
                for i, s in candidates
            ],
            "new_topic": False,
        }
    routed = routing["topics"]
    known = {info["id"] for info, _ in candidates}
    # A router that leaves a topic of the asked period out does not overrule the date.
    routed_ids = {r["topic_id"] for r in routed}
    routed = routed + [
        RoutedTopic(topic_id=topic_id, relevance=similarity[topic_id], reason="in the asked period")
        for topic_id in dated
        if topic_id in known and topic_id not in routed_ids
    ]
    threshold = candidate_threshold(active_count, deep=request["deep"])
    quota = activation_quota(active_count, settings, deep=request["deep"])
    if dated:
        # Where the quota is short (a full registry lets one in), a topic with messages on
        # the asked days goes before the router's other picks: the date is what was asked.
        on_the_days = held_in(periods, days)
        routed = sorted(routed, key=lambda r: r["topic_id"] not in on_the_days)
    # A topic of the asked period is what the user asked for: the date chooses it, whatever
    # its relevance to the words of the question ("what did we talk about in March?").
    chosen = [
        r
        for r in routed
        if r["topic_id"] in known and (r["relevance"] >= threshold or r["topic_id"] in dated)
    ][:quota]

    now = services.clock().isoformat()
    for pick in chosen:
        topic_id = pick["topic_id"]
        previous = topics[topic_id]["status"]
        topics[topic_id] = {**topics[topic_id], "status": "active", "last_active_at": now}
        stores.topic_index.set_status(topic_id, "active", previous=previous)
    clarify: list[str] = []
    if chosen:
        events.append(
            {
                "kind": "activated",
                "reason": request["reason"],
                "topic_ids": [p["topic_id"] for p in chosen],
                "detail": "; ".join(f"{p['topic_id']}: {p['reason']}" for p in chosen),
            }
        )
        get_stream_writer()(
            {
                "event": "activated",
                "reason": request["reason"],
                "topics": [p["topic_id"] for p in chosen],
            }
        )
    elif request["reason"] == "recall_cue" and routed:
        # Nothing clears even the loosened bar: ask the user, as a person would (§4.7 path 3).
        names = {info["id"]: info["name"] for info, _ in candidates}
        clarify = [names[r["topic_id"]] for r in routed[:2] if r["topic_id"] in names]
    if request["reason"] == "tool_call":
        events.extend(search_other_threads(runtime, request["query"]))
    update: dict[str, Any] = {
        "topics": topics,
        "activation": None,
        "activation_rounds": state.get("activation_rounds", 0) + 1,
        "searched": True,
        "clarify_topics": clarify,
        "events": events,
    }
    opening = _latest_user_id(state) if routing["new_topic"] and not chosen else None
    if opening is not None:
        # No match anywhere (seed 000 §3: 无匹配 → 确认为新话题): the split that moves this
        # turn's exchange starts a new topic with it instead of attaching it to an old one.
        hints = [h for h in state.get("new_topic_hints") or [] if h != opening]
        update["new_topic_hints"] = [*hints, opening][-MAX_NEW_TOPIC_HINTS:]
        events[0]["detail"] += "; no topic matches: a new topic, started by the next split"
    return update


def search_other_threads(runtime: Runtime[TopicContext], query: str) -> list[TurnEvent]:
    """The model's ``activate_topic`` in user scope: the user's other threads searched too.

    What it finds joins the turn's quotes of those threads (``scope/topic_reading.py``), which
    the next assembly of the turn shows; an event says how much. Nothing in thread scope.
    """
    reading = scope_quotes_of(runtime)
    if not reading.searches:
        return []
    quotes, topics = reading.search(query)
    detail = f"user scope: {quotes} messages found in the user's other threads"
    return [
        {
            "kind": "index_search",
            "reason": "tool_call",
            "detail": detail + (f", {topics} of their topics being read" if topics else ""),
        }
    ]


def _route(
    services: TopicServices,
    store: TopicStore,
    topics: dict[str, TopicRecord],
    request: ActivationRequest,
    candidates: list[tuple[TopicInfo, float]],
) -> IndexRouting:
    """Ask the index router; a model router reads the whole index window (seed 000 §2–3).

    The window (recent briefs, time index) is built only for a router that reads it, so the
    native router ranks, and costs, exactly as before.
    """
    router = services.roles.index_router
    query, deep = request["query"], request["deep"]
    if isinstance(router, WindowIndexRouter):
        window = index_window(
            topics,
            store,
            services.settings,
            services.token_counter,
            exclude={info["id"] for info, _ in candidates},
        )
        return router.route_window(query, candidates, window, deep=deep)
    return {"topics": router.route(query, candidates, deep=deep), "new_topic": False}


def _latest_user_id(state: TopicState) -> str | None:
    """Id of the newest user message: the exchange the new-topic verdict is about."""
    for message in reversed(state["messages"]):
        if isinstance(message, HumanMessage):
            return message.id
    return None
