"""Read one active topic against the unsplit messages (seed 000 §4.2); one task per topic."""

from __future__ import annotations

import logging
import math
import shlex
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import numpy as np
import numpy.typing as npt
from langgraph.runtime import Runtime

from langgraph_topics.activation.governor import memo_of, native_window
from langgraph_topics.errors import log_degraded
from langgraph_topics.namespace.topic_views import TopicViews
from langgraph_topics.namespace.unsplit_shown import ShownUnsplit, shown_unsplit
from langgraph_topics.namespace.window import windowed_messages
from langgraph_topics.retrieval.turn_evidence import turn_evidence
from langgraph_topics.roles.protocols import TopicVerdict, TopicWindow
from langgraph_topics.roles.topic_info import topic_info
from langgraph_topics.runtime_protocols import has_views, uses_evidence
from langgraph_topics.services import TopicContext, TopicServices, branch_ranges, services_of
from langgraph_topics.settings import Settings
from langgraph_topics.state.records import StoredMessage, TopicResult, TurnEvent, WindowDecision
from langgraph_topics.state.schema import TopicWindowInput, TopicWindowTask
from langgraph_topics.stores.message_views import MessagesView
from langgraph_topics.stores.protocols import TopicIndex
from langgraph_topics.stores.topic_index import stored_or_none
from langgraph_topics.summaries.card import SummaryCard
from langgraph_topics.summaries.native_cards import NativeCards
from langgraph_topics.summaries.topic_cards import result_card
from langgraph_topics.summaries.topic_tokens import topic_tokens

log = logging.getLogger(__name__)

SUMMARY_HARD_LIMIT_FACTOR = 2
"""The summary limit is soft (§16.1); past twice the limit it is cut, to protect the budget."""

_TOPIC_VIEWS = TopicViews()
"""Shared by every memory of the process: a view is reused only for equal messages."""

_NATIVE_CARDS = NativeCards()
"""Shared by every memory of the process: a card is reused only for the same topic list."""


def topic_as_shown(
    messages: Sequence[StoredMessage], unsplit: ShownUnsplit, settings: Settings
) -> list[StoredMessage]:
    """A topic's messages as a topic window reads them: large tool results as previews."""
    return windowed_messages(
        messages,
        unsplit.policy,
        unsplit.language,
        settings.prompt_dir,
        preview_chars=settings.namespace_preview_chars,
    )


def bounded_summary(summary: str, settings: Settings) -> str:
    """A window's summary cut at twice the soft limit (§16.1), to protect the budget."""
    limit = settings.summary_soft_limit_chars * SUMMARY_HARD_LIMIT_FACTOR
    return summary[:limit] + "…" if len(summary) > limit else summary


def clamp_score(value: object) -> float:
    """A relevance score forced into [0, 1]; anything unreadable counts as 0."""
    try:
        score = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 0.0
    return 0.0 if math.isnan(score) else min(1.0, max(0.0, score))


def reference_relevance(verdict: TopicVerdict, score: float) -> dict[str, float]:
    """Each referenced id's relevance in [0, 1]: the back end's, or derived from its order.

    A back end that gives none (a model lists its references best first) gets the topic score
    for its first reference, falling linearly to half of it for the last, so quotes of
    different topics compare by topic score first and by the model's order within a topic.
    """
    ids = verdict["referenced_message_ids"]
    given = verdict.get("reference_relevance")
    if given is not None and len(given) == len(ids):
        return {i: clamp_score(value) for i, value in zip(ids, given, strict=True)}
    last = max(1, len(ids) - 1)
    derived: dict[str, float] = {}
    for place, message_id in enumerate(ids):
        derived.setdefault(message_id, score * (1.0 - 0.5 * place / last))
    return derived


def topic_window(state: TopicWindowInput, *, runtime: Runtime[TopicContext]) -> dict[str, Any]:
    """Score the topic and pick the messages the main window needs.

    A failing back end leaves this topic out of the turn (logged); the turn goes on.
    """
    # A task an earlier version saved (a turn cut short) carries the task's keys at the top.
    task = state.get("window_task") or cast(TopicWindowTask, state)
    services = services_of(runtime)
    settings = services.settings
    decision = task.get("governor")
    window: TopicWindow = services.roles.topic_window
    skip: TurnEvent | None = None
    if decision is not None:
        governed = _governed(task, decision, services)
        if governed is not None:
            return governed
        if decision["decision"] == "skip":
            # No model call, but the topic's evidence still reaches the main window: the native
            # back end reads it (milliseconds), as in a memory without models.
            skip = _skip_event(task["topic_id"], decision)
            window = cast(TopicWindow, native_window(window))
    stores = services.stores(task["thread_id"], branch_ranges(task))
    store = stores.topic_store
    try:
        info = topic_info(store, task["topic_id"], "active")
        topic_messages: Sequence[StoredMessage] = (
            store.messages_view(task["topic_id"])
            if has_views(store)
            else store.messages(task["topic_id"])
        )
    except KeyError:
        # The registry names a topic these stores do not hold: another data directory than the
        # checkpoint's (e.g. a graph run without its context), or files removed by hand.
        log.warning(
            "topic %s is not in the topic store (its file removed?); left out of this turn: "
            "`langgraph-topics repair --thread %s` rebuilds the thread from what still holds "
            "its messages",
            task["topic_id"],
            shlex.quote(task["thread_id"]),
        )
        missing: TurnEvent = {
            "kind": "degraded",
            "topic_ids": [task["topic_id"]],
            "detail": "unknown topic: not in this data directory's topic store",
        }
        return {"events": [missing]}
    # The topic window reads large tool results as the main window shows them (seed 001 T2).
    # Every window of the fan-out reads the same unsplit list: its view is worked out once.
    shared = shown_unsplit(task["unsplit"], settings)
    language, policy = shared.language, shared.policy

    def shown(messages: Sequence[StoredMessage]) -> list[StoredMessage]:
        return topic_as_shown(messages, shared, settings)

    view_key = (
        task["thread_id"],
        task["topic_id"],
        policy,
        language,
        str(settings.prompt_dir),
        settings.namespace_preview_chars,
    )
    shown_topic = _TOPIC_VIEWS.view(view_key, topic_messages, shown)
    unsplit_view = list(shared.shown)  # the window's own list: a back end may change it
    try:
        if uses_evidence(window):
            evidence = turn_evidence(services, stores, task["unsplit"], task.get("families") or {})
            verdict = window.evaluate_with_evidence(
                info,
                shown_topic,
                unsplit_view,
                evidence,
                stored_brief=stored_brief(window, stores.topic_index, task["topic_id"]),
            )
        else:
            verdict = window.evaluate(info, shown_topic, unsplit_view)
            native = native_window(window) if decision is not None else None
            if native is not None and settings.topic_window_native_quotes:
                # The model adds its judgement to the evidence, never takes evidence away.
                evidence = turn_evidence(
                    services, stores, task["unsplit"], task.get("families") or {}
                )
                found = native.evaluate_with_evidence(
                    info,
                    shown_topic,
                    unsplit_view,
                    evidence,
                    stored_brief=stored_brief(native, stores.topic_index, task["topic_id"]),
                )
                verdict = with_native_evidence(verdict, found, settings.reference_threshold)
    except Exception as error:
        log_degraded(
            log, f"topic window failed for {task['topic_id']}; left out of this turn", error
        )
        event: TurnEvent = {
            "kind": "degraded",
            "topic_ids": [task["topic_id"]],
            "detail": f"topic window failed: {error}",
        }
        return {"events": [event] if skip is None else [skip, event]}

    score = clamp_score(verdict["relevance_score"])
    relevance = reference_relevance(verdict, score)
    topic_id = task["topic_id"]

    def in_topic(ids: Sequence[str]) -> list[str]:
        # Located through the store's map (a set of the topic's ids would cost its length per
        # turn), all at once: a turn's windows share the store's lock.
        located = store.locate_many(ids)
        return [i for i in dict.fromkeys(ids) if located.get(i) == topic_id]

    references = in_topic(verdict["referenced_message_ids"])
    summary = verdict["summary"]
    if score < settings.reference_threshold:
        references, summary = [], ""
    summary = bounded_summary(summary, settings)
    card: SummaryCard | None = None
    card_refused: str | None = None
    if summary:
        topic_name = info["name"] or task["topic_id"]

        def make_card() -> tuple[SummaryCard, str | None]:
            return result_card(
                verdict.get("card"),
                summary=summary,
                topic_name=topic_name,
                given_ids=lambda ids: {
                    *(i for i in ids if i in shared.ids),
                    *in_topic([i for i in ids if i not in shared.ids]),
                },
                references=references,
                count_tokens=services.token_counter,
                quoted_messages=_in_conversation_order(store.get_messages(references), references),
                topic_tokens=lambda: topic_tokens(
                    store, task["topic_id"], topic_messages, services.token_counter
                ),
            )

        if verdict.get("card") is None and isinstance(topic_messages, MessagesView):
            # A native card: the same topic, quotes, summary and name make the same card.
            made_for = (tuple(references), summary, topic_name, services.token_counter)
            card = _NATIVE_CARDS.card(topic_messages, made_for, lambda: make_card()[0])
        else:
            card, card_refused = make_card()
    result: TopicResult = {
        "topic_id": task["topic_id"],
        "name": info["name"],
        "brief": info["brief"],
        "file": info["file"],
        "relevance_score": score,
        "referenced_message_ids": references,
        "summary": summary,
        "reference_relevance": [relevance[i] for i in references],
        "round": task["round"],
    }
    if card is not None:
        result["summary_card"] = card
    if skip is not None:
        result["window"] = "native"
    elif decision is not None:
        result["window"] = "read"
        result["input_tokens"] = decision.get("input_tokens", 0)
        if decision.get("fingerprint") and not verdict.get("prompt_refused"):
            memo_of(services.roles.topic_window).keep(
                _scope(task, services), task["topic_id"], decision["fingerprint"], result
            )
    dropped = len(verdict["referenced_message_ids"]) - len(references)
    update: dict[str, Any] = {"topic_results": {task["topic_id"]: result}}
    if skip is not None:
        update["events"] = [skip]
    if dropped and score >= settings.reference_threshold:
        update.setdefault("events", []).append(
            {
                "kind": "degraded",
                "topic_ids": [task["topic_id"]],
                "detail": f"{dropped} unknown or repeated message ids dropped",
            }
        )
    if verdict.get("prompt_refused"):
        tokens = topic_tokens(store, task["topic_id"], topic_messages, services.token_counter)
        update["oversized_topics"] = {task["topic_id"]: tokens}
        oversized: TurnEvent = {
            "kind": "oversized",
            "topic_ids": [task["topic_id"]],
            "detail": f"prompt refused as too long ({tokens:,} topic tokens): read natively "
            "this turn, divided into subtopics at the next split",
        }
        update.setdefault("events", []).append(oversized)
    if card_refused:
        refused: TurnEvent = {
            "kind": "degraded",
            "topic_ids": [task["topic_id"]],
            "detail": f"{card_refused}; a native card is used",
        }
        update.setdefault("events", []).append(refused)
    return update


def stored_brief(
    window: object, index: TopicIndex, topic_id: str
) -> Callable[[str], npt.NDArray[np.float32] | None] | None:
    """The index's vector of the topic's brief, for a window embedding with the index's model.

    Vectors of another model would not compare with the window's (None: it embeds its own).
    """
    embedder = getattr(window, "embedder", None)
    if embedder is None or embedder is not getattr(index, "embedder", None):
        return None
    stored = stored_or_none(index)
    return lambda text: stored(topic_id, text)


def _scope(task: TopicWindowTask, services: TopicServices) -> tuple[str, str]:
    return str(services.settings.data_dir), task["thread_id"]


def with_native_evidence(
    model: TopicVerdict, native: TopicVerdict, threshold: float
) -> TopicVerdict:
    """A model's reading of a topic, completed with the native reading of the same evidence.

    The model's references come first, valued by its score and order (or their evidence
    relevance when higher); the native ones it did not name follow at their evidence relevance,
    so what the evidence search would quote stays in reach of the window whatever the model
    missed. The topic scores the higher of the two
    readings; the model's summary (and card) when it wrote one, else the native one.
    """
    model_score, native_score = (
        clamp_score(model["relevance_score"]),
        clamp_score(native["relevance_score"]),
    )
    chosen = reference_relevance(model, model_score) if model_score >= threshold else {}
    found = reference_relevance(native, native_score) if native_score >= threshold else {}
    # A message both readings name keeps the higher value: the model's order within its own
    # references says nothing about how the message compares with other topics' quotes.
    merged = {i: max(v, found.get(i, 0.0)) for i, v in chosen.items()}
    merged |= {i: v for i, v in found.items() if i not in chosen}
    written = model if model["summary"] and model_score >= threshold else native
    verdict: TopicVerdict = {
        "relevance_score": max(model_score, native_score),
        "referenced_message_ids": list(merged),
        "reference_relevance": list(merged.values()),
        "summary": written["summary"] if written is model or native_score >= threshold else "",
    }
    card = written.get("card")
    if card is not None and verdict["summary"]:
        verdict["card"] = card
    if model.get("prompt_refused"):
        verdict["prompt_refused"] = True
    return verdict


def _skip_event(topic_id: str, decision: WindowDecision) -> TurnEvent:
    return {
        "kind": "skipped",
        "topic_ids": [topic_id],
        "reason": decision.get("reason", ""),
        "detail": f"topic window not read: {decision.get('detail', '')}",
    }


def _governed(
    task: TopicWindowTask, decision: WindowDecision, services: TopicServices
) -> dict[str, Any] | None:
    """What a governed task comes to without a read (None: read it, natively for a skip).

    A skip the evidence does not reach is its event alone; with
    ``topic_window_native_quotes`` off, a skip is its event and its native score (grey
    activation goes on, nothing is quoted); a reuse is the kept result, and a result the memo
    no longer holds (another process, evicted) is read again.
    """
    topic_id = task["topic_id"]
    if decision["decision"] == "skip":
        event = _skip_event(topic_id, decision)
        score = decision.get("native_score")
        if score is None or native_window(services.roles.topic_window) is None:
            return {"events": [event]}
        if services.settings.topic_window_native_quotes:
            return None
        # The native reading's score keeps grey activation going; it quotes nothing.
        store = services.stores(task["thread_id"], branch_ranges(task)).topic_store
        try:
            info = topic_info(store, topic_id, "active")
        except KeyError:
            return {"events": [event]}
        scored: TopicResult = {
            "topic_id": topic_id,
            "name": info["name"],
            "brief": info["brief"],
            "file": info["file"],
            "relevance_score": clamp_score(score),
            "referenced_message_ids": [],
            "summary": "",
            "round": task["round"],
            "window": "native",
        }
        return {"topic_results": {topic_id: scored}, "events": [event]}
    if decision["decision"] != "reuse":
        return None
    kept = memo_of(services.roles.topic_window).take(
        _scope(task, services), topic_id, decision.get("fingerprint", "")
    )
    if kept is None:
        return None
    reused: TopicResult = {**kept, "round": task["round"], "window": "reused", "input_tokens": 0}
    return {"topic_results": {topic_id: reused}}


def _in_conversation_order(
    found: Mapping[str, StoredMessage], references: Sequence[str]
) -> list[StoredMessage]:
    """The referenced messages by time (the order a model lists them in is its own)."""
    quoted = [found[i] for i in references if i in found]
    return sorted(quoted, key=lambda m: m.get("timestamp") or "")
