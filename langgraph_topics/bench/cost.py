"""``bench cost``: one chat turn's calls, tokens, latency and price with every role on a model.

For each history size and budget: the history is imported with the native back ends (fast),
then the roles switch to the LLM back ends on a simulated OpenAI-compatible provider
(``sim_provider``), reached exactly as a user reaches one: ``openai:<model>`` strings in the
settings, ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` in the environment, the real
``langchain-openai`` client. Every chat turn (a LoCoMo question as the user's line) is timed
as the user sees it (``TopicMemory.chat`` returning), and charged with the calls the provider
answered for it. Beside each turn, in the same run and on the same provider: a retrieval-only
turn (the package's own evidence search fills the budget, then one strong-model call) and a
full-context turn (the whole history in one strong-model call, when it fits 128k tokens).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar, cast

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from langgraph_topics.bench.cost_report import summarise_case
from langgraph_topics.bench.sim_provider import CallRecord, SimConfig, SimProvider, openai_endpoint
from langgraph_topics.datasets import LocomoConversation, load_locomo
from langgraph_topics.settings import Settings
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.state.working_set import stored_view, unsplit_messages
from langgraph_topics.tokens import TokenCounter, default_token_counter
from langgraph_topics.tokens.counting import message_tokens

THREAD = "bench-cost"
FULL_CONTEXT_LIMIT = 128_000
"""A full-context turn above this many tokens does not fit a 128k-context model."""
RETRIEVAL_SYSTEM = (
    "You are a helpful assistant. Answer the user's question from the retrieved messages of "
    "your earlier conversations with them."
)
FULL_SYSTEM = "You are a helpful assistant. The whole conversation so far follows."
Progress = Callable[[str], None]
T = TypeVar("T")


@dataclass
class CostConfig:
    """What ``bench cost`` runs."""

    data: Path
    histories: list[int] = field(default_factory=lambda: [24_000])
    """Target history sizes in tokens (a single conversation within 20 % is used whole)."""
    budgets: list[int] = field(default_factory=lambda: [4000])
    turns: int = 24
    warmup: int = 3
    sim: SimConfig = field(default_factory=SimConfig)
    summaries: bool = False
    """``Settings.topic_window_summaries`` of the chat turns."""
    reads: int | None = None
    """``Settings.topic_window_reads`` of the chat turns (None: the setting's default)."""
    native_quotes: bool = True
    """``Settings.topic_window_native_quotes`` of the chat turns."""
    work_dir: Path | None = None
    """Scratch data directories go here (a temporary directory when ``None``)."""


@dataclass
class History:
    """A history to import and the questions asked over it."""

    label: str
    messages: list[StoredMessage]
    questions: list[str]
    tokens: int
    conversations: list[str]
    evidence: list[tuple[str, ...]]
    """Each question's evidence turns (ids as imported), where the history holds them."""


def parse_size(text: str) -> int:
    """``24k`` → 24,000; ``1m`` → 1,000,000; plain integers as they are.

    Raises:
        ValueError: Not a positive size.
    """
    raw = text.strip().lower().replace("_", "").replace(",", "")
    scale = 1_000_000 if raw.endswith("m") else 1000 if raw.endswith("k") else 1
    number = float(raw.rstrip("mk")) * scale
    if number <= 0:
        raise ValueError(f"not a positive size: {text!r}")
    return int(number)


def build_history(
    conversations: Sequence[LocomoConversation], target: int, counter: TokenCounter
) -> History:
    """About ``target`` tokens of history from the conversations.

    A single conversation within 20 % of the target is used whole (its own ids); otherwise the
    conversations are concatenated in file order, again and again if needed, each copy's ids
    prefixed and its dates moved after the previous one's, and cut at the target.
    """
    sizes = [
        sum(message_tokens(cast(StoredMessage, m), counter) for m in c.messages)
        for c in conversations
    ]
    close = [(abs(s - target), i) for i, s in enumerate(sizes) if abs(s - target) <= 0.2 * target]
    if close:
        chosen = conversations[min(close)[1]]
        return History(
            _label(target),
            [dict(m) for m in chosen.messages],  # type: ignore[misc]
            [q.question for q in chosen.questions],
            sizes[min(close)[1]],
            [chosen.sample_id],
            [q.evidence for q in chosen.questions],
        )
    messages: list[StoredMessage] = []
    questions: list[str] = []
    evidence: list[tuple[str, ...]] = []
    names: list[str] = []
    total = 0
    copy = 0
    last: datetime | None = None
    while total < target:
        for conversation in conversations:
            if total >= target:
                break
            shift = timedelta(0)
            first = _time(conversation.messages[0]) if conversation.messages else None
            if last is not None and first is not None and first <= last:
                shift = last - first + timedelta(days=1)
            names.append(f"{conversation.sample_id}#{copy}")
            questions.extend(q.question for q in conversation.questions)
            evidence.extend(
                tuple(f"{copy}.{conversation.sample_id}.{e}" for e in q.evidence)
                for q in conversation.questions
            )
            for message in conversation.messages:
                if total >= target:
                    break
                moved: dict[str, Any] = {
                    **message,
                    "id": f"{copy}.{conversation.sample_id}.{message['id']}",
                }
                stamp = _time(message)
                if stamp is not None:
                    last = stamp + shift
                    moved["timestamp"] = last.isoformat()
                messages.append(moved)  # type: ignore[arg-type]
                total += message_tokens(moved, counter)  # type: ignore[arg-type]
        copy += 1
    held = {m["id"] for m in messages}
    evidence = [tuple(e for e in found if e in held) for found in evidence]
    return History(_label(target), messages, questions, total, names, evidence)


def _time(message: Any) -> datetime | None:
    stamp = message.get("timestamp")
    try:
        return datetime.fromisoformat(stamp) if stamp else None
    except ValueError:
        return None


def _label(target: int) -> str:
    if target >= 1_000_000 and target % 100_000 == 0:
        return f"{target / 1_000_000:g}M"
    return f"{target / 1000:g}k" if target >= 1000 else str(target)


def run_cost(config: CostConfig, progress: Progress) -> dict[str, Any]:
    """Run every history size at every budget; the report's ``cases`` hold one entry each."""
    conversations = load_locomo(config.data)
    if not conversations:
        raise SystemExit(f"no conversations in {config.data}")
    counter = default_token_counter()
    root = Path(tempfile.mkdtemp(prefix="bench-cost-", dir=config.work_dir))
    started = time.perf_counter()
    cases = []
    try:
        for target in config.histories:
            history = build_history(conversations, target, counter)
            for budget in config.budgets:
                cases.append(_run_case(config, history, budget, root, counter, progress))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {
        "config": {
            "data": config.data.name,
            "histories": config.histories,
            "budgets": config.budgets,
            "turns": config.turns,
            "warmup": config.warmup,
            "time_scale": config.sim.time_scale,
            "topic_window_summaries": config.summaries,
            "topic_window_native_quotes": config.native_quotes,
            "topic_window_reads": config.reads
            if config.reads is not None
            else Settings().topic_window_reads,
            "latency_model": {
                "strong": {"model": config.sim.strong_model, **vars(config.sim.strong)},
                "cheap": {"model": config.sim.cheap_model, **vars(config.sim.cheap)},
            },
            "cache_model": vars(config.sim.cache),
            "full_context_limit": FULL_CONTEXT_LIMIT,
        },
        "cases": cases,
        "seconds": round(time.perf_counter() - started, 1),
    }


def _run_case(
    config: CostConfig,
    history: History,
    budget: int,
    root: Path,
    counter: TokenCounter,
    progress: Progress,
) -> dict[str, Any]:
    from langgraph_topics.memory import TopicMemory

    where = f"{history.label} @{budget}"
    data_dir = root / f"{history.label}-{budget}"
    native = Settings(
        data_dir=data_dir,
        budget_tokens=budget,
        language="en",
        strong_model=None,
        cheap_model=None,
        role_models={},
    )
    total = len(history.messages)
    imported_at = time.perf_counter()

    def imported(done: int) -> None:
        if done == total or done % 500 == 0:
            progress(f"{where}: imported {done:,}/{total:,} messages (native back ends)")

    with TopicMemory(settings=native) as memory:
        memory.import_messages(THREAD, history.messages, progress=imported)
    import_seconds = time.perf_counter() - imported_at
    progress(f"{where}: import took {import_seconds:.0f} s; chat turns on the simulated provider")

    questions = _questions(
        list(zip(history.questions, history.evidence, strict=True)),
        config.warmup + config.turns,
    )
    with SimProvider(config.sim, counter) as provider, openai_endpoint(provider.url):
        # Breakpoints on: the explicit-cache sheet prices a provider that caches only up to
        # them (what ``cache_breakpoints`` does by itself for Anthropic); the automatic
        # cache reads are the same with or without them.
        settings = replace(
            native,
            strong_model=f"openai:{config.sim.strong_model}",
            cheap_model=f"openai:{config.sim.cheap_model}",
            topic_window_summaries=config.summaries,
            topic_window_native_quotes=config.native_quotes,
            cache_breakpoints=True,
        )
        if config.reads is not None:
            settings = replace(settings, topic_window_reads=config.reads)
        from langgraph_topics.roles.llm.models import resolve_model

        strong = resolve_model(settings.strong_model, settings)
        assert strong is not None  # a model string always gives a model
        with TopicMemory(settings=settings) as memory:
            texts = {m["id"]: m for m in memory.transcript(THREAD)}
            chat: list[BaseMessage] = [
                HumanMessage(m["content"]) if m["role"] == "user" else AIMessage(m["content"])
                for m in texts.values()
            ]
            chat_tokens = sum(message_tokens(m, counter) for m in texts.values())
            turns: list[dict[str, Any]] = []
            for number, (question, evidence) in enumerate(questions, start=1):
                turn = _memory_turn(memory, provider, question, config.sim.time_scale)
                turn["evidence_recall"] = _recall(evidence, turn.pop("window_ids"))
                retrieval = _retrieval_turn(
                    memory, provider, strong, question, budget, counter, texts
                )
                retrieval["evidence_recall"] = _recall(evidence, retrieval.pop("window_ids"))
                full = _full_turn(provider, strong, chat, question, chat_tokens, counter)
                reply = turn.pop("reply")
                chat += [HumanMessage(question), AIMessage(reply)]
                chat_tokens += counter(question) + counter(reply)
                turns.append(
                    {
                        "turn": number,
                        "warmup": number <= config.warmup,
                        "memory": turn,
                        "retrieval_only": retrieval,
                        "full_context": full,
                    }
                )
                progress(
                    f"{where}: turn {number}/{len(questions)}: {turn['wall_s']:.2f} s, "
                    f"{turn['calls']} calls (retrieval-only {retrieval['wall_s']:.2f} s)"
                )
    return summarise_case(
        {
            "history": history.label,
            "history_tokens": history.tokens,
            "history_messages": len(history.messages),
            "conversations": history.conversations,
            "budget": budget,
            "import_s": round(import_seconds, 1),
            "turns": turns,
        }
    )


def _recall(evidence: Sequence[str], present: Sequence[str]) -> float | None:
    """The share of a question's evidence turns in a window (None: it has none)."""
    if not evidence:
        return None
    shown = set(present)
    return round(sum(1 for e in evidence if e in shown) / len(evidence), 4)


def _questions(pool: Sequence[T], count: int) -> list[T]:
    """``count`` questions, spread over the pool (repeated if it is short)."""
    if not pool:
        raise SystemExit("the history has no questions to ask")
    step = max(1, len(pool) // count)
    return [pool[(i * step) % len(pool)] for i in range(count)]


def _settle(memory: Any, provider: SimProvider, scale: float) -> None:
    """Wait for the turn's background work: the memory's own hook, then a quiet provider."""
    wait_idle = getattr(memory, "wait_idle", None)
    if callable(wait_idle):
        wait_idle()
    quiet = max(0.02, 0.2 * scale)
    deadline = time.perf_counter() + 600
    calm_since = time.perf_counter()
    while time.perf_counter() < deadline:
        if not provider.idle():
            calm_since = time.perf_counter()
        elif time.perf_counter() - calm_since >= quiet:
            return
        time.sleep(quiet / 4)


def _memory_turn(memory: Any, provider: SimProvider, question: str, scale: float) -> dict[str, Any]:
    mark = len(provider.calls)
    started = time.perf_counter()
    reply = memory.chat(THREAD, question)
    ended = time.perf_counter()
    _settle(memory, provider, scale)
    calls = provider.calls[mark:]
    context = memory.state(THREAD).get("context") or {}
    return {
        "reply": reply,
        "window_ids": list(context.get("message_ids", [])),
        "wall_s": round(ended - started, 4),
        **_charge(calls),
        "critical_path": critical_path(calls, started, ended),
        "after_reply_calls": sum(1 for c in calls if c.started >= ended),
        "format_retries": sum(1 for c in calls if c.retry),
        "topic_window_scores": [c.score for c in calls if c.role == "topic_window"],
        "splitter_input_max": max(
            (c.input_tokens for c in calls if c.role == "splitter"), default=0
        ),
    }


def _retrieval_turn(
    memory: Any,
    provider: SimProvider,
    strong: Any,
    question: str,
    budget: int,
    counter: TokenCounter,
    texts: dict[str, StoredMessage],
) -> dict[str, Any]:
    """The package's evidence search fills the budget; one strong call answers."""
    values = memory.state(THREAD)
    stores = memory.services.branch_stores(THREAD, values)
    working = stored_view(values.get("messages", []))
    for message in working:
        texts.setdefault(message["id"], message)
    unsplit = unsplit_messages(working, stores.topic_store)
    # Timed from the search on: reading the checkpoint above is this bench's plumbing, not
    # something a retrieve-then-answer application pays.
    mark = len(provider.calls)
    started = time.perf_counter()
    evidence = memory.services.scorer.score(stores.message_index, question, unsplit)
    searched = time.perf_counter()
    room = budget - counter(RETRIEVAL_SYSTEM) - counter(question)
    by_position = {p: i for i, p in evidence.position.items()}
    chosen: list[tuple[int, str]] = []
    for position in evidence.top(min(len(by_position), 2000)):
        found = texts.get(by_position.get(position, ""))
        if found is None:
            continue
        line = retrieved_line(found)
        cost = counter(line) + 1
        if cost <= room:
            chosen.append((position, line))
            room -= cost
        if room < 20:
            break
    chosen.sort(key=lambda pair: pair[0])
    retrieved = "\n".join(line for _, line in chosen)
    strong.invoke(
        [
            SystemMessage(RETRIEVAL_SYSTEM),
            HumanMessage(f"<retrieved>\n{retrieved}\n</retrieved>\n\n{question}"),
        ]
    )
    ended = time.perf_counter()
    return {
        "wall_s": round(ended - started, 4),
        "search_s": round(searched - started, 4),
        "retrieved_messages": len(chosen),
        "window_ids": [by_position[position] for position, _ in chosen],
        **_charge(provider.calls[mark:]),
    }


def retrieved_line(message: StoredMessage) -> str:
    """A retrieved message as a retrieve-then-answer application would send it: one line.

    The budget is counted on this line, the text the model really receives.
    """
    who = message.get("name") or message["role"]
    stamp = message.get("timestamp") or ""
    return f"[{stamp}] {who}: {message['content']}" if stamp else f"{who}: {message['content']}"


def _full_turn(
    provider: SimProvider,
    strong: Any,
    chat: list[BaseMessage],
    question: str,
    tokens: int,
    counter: TokenCounter,
) -> dict[str, Any]:
    """The whole history in one strong call (not made above the 128k-token context)."""
    needed = tokens + counter(FULL_SYSTEM) + counter(question)
    if needed > FULL_CONTEXT_LIMIT:
        return {"fits": False, "input_tokens": needed}
    mark = len(provider.calls)
    started = time.perf_counter()
    strong.invoke([SystemMessage(FULL_SYSTEM), *chat, HumanMessage(question)])
    ended = time.perf_counter()
    return {"fits": True, "wall_s": round(ended - started, 4), **_charge(provider.calls[mark:])}


def _charge(calls: Sequence[CallRecord]) -> dict[str, Any]:
    """Calls and tokens, in all and per role, with each call's record."""
    roles: dict[str, dict[str, Any]] = {}
    for call in calls:
        row = roles.setdefault(
            call.role,
            {
                "calls": 0,
                "input": 0,
                "cached": 0,
                "explicit_cached": 0,
                "output": 0,
                "tier": call.tier,
            },
        )
        row["calls"] += 1
        row["input"] += call.input_tokens
        row["cached"] += call.cached_tokens
        row["explicit_cached"] += call.explicit_cached_tokens
        row["output"] += call.output_tokens
    return {
        "calls": len(calls),
        "input": sum(c.input_tokens for c in calls),
        "cached": sum(c.cached_tokens for c in calls),
        "explicit_cached": sum(c.explicit_cached_tokens for c in calls),
        "output": sum(c.output_tokens for c in calls),
        "roles": roles,
    }


def critical_path(calls: Sequence[CallRecord], started: float, ended: float) -> dict[str, Any]:
    """Where the user-facing turn's time went: waves of overlapping model calls, and the rest.

    Calls that began before the reply are grouped into waves (a wave: calls whose intervals
    overlap); each wave's length is on the critical path. ``package_s`` is the turn's time
    outside any model call (graph, evidence search, assembly, stores).
    """
    facing = sorted((c for c in calls if c.started < ended), key=lambda c: c.started)
    waves: list[dict[str, Any]] = []
    wave_end = 0.0
    for call in facing:
        begin, end = max(call.started, started), min(call.ended, ended)
        if waves and begin <= wave_end:
            wave = waves[-1]
            wave_end = max(wave_end, end)
            wave["end"] = wave_end
        else:
            wave = {"start": begin, "end": end, "roles": {}}
            waves.append(wave)
            wave_end = end
        wave["roles"][call.role] = wave["roles"].get(call.role, 0) + 1
    model_s = sum(w["end"] - w["start"] for w in waves)
    # The package's own time, piece by piece: before the first wave, between waves, after the
    # last one (the reply's parsing, the bookkeeping, the checkpoint).
    edges = [started, *(t for w in waves for t in (w["start"], w["end"])), ended]
    gaps = [round(max(0.0, b - a), 3) for a, b in zip(edges[::2], edges[1::2], strict=True)]
    return {
        "waves": [{"roles": w["roles"], "seconds": round(w["end"] - w["start"], 3)} for w in waves],
        "model_s": round(model_s, 3),
        "package_s": round(ended - started - model_s, 3),
        "package_gaps_s": gaps,
    }
