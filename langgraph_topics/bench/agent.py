"""``bench agent``: topic memory as ``create_agent`` middleware beside the usual alternatives.

One conversation (a tool call every ``tool_every``-th turn, two facts planted early and asked
near the end) runs through ``langchain.agents.create_agent`` three times in one process: with
:class:`~langgraph_topics.middleware.TopicMemoryMiddleware`, with LangChain's
``SummarizationMiddleware`` and with no middleware. The chat model is a tool-calling fake
(:class:`~langgraph_topics.middleware.fakes.ToolCallingFakeModel`) that records every request,
so each model call is measured where the provider would see it:

- **tokens per call**: the whole request (system message, messages, bound tools' schemas) by
  the package's token counter (:func:`~langgraph_topics.middleware.request_tokens.request_tokens`);
- **CPU per model call**: the process CPU time (every thread: the memory's workers too) from
  the previous model call's end (or the turn's start) to this one's end; what a turn spends
  after its last call (recording the reply, the bookkeeping) counts to that last call. The
  bench's own counting of each request is left out (it grows with the request, so it would
  charge the agent without memory for being measured);
- **recall**: whether each planted fact's text is in the request of its recall turn's calls;
- **tool pairing**: requests where a tool call has no result or a result no call before it.

Then, in the same run, the long thread: the thread first holds ``messages`` messages of history
(imported into the memory; the other agents get them as their starting state), then
``tail_turns`` agent turns run, the last asking the earliest fact. The report ends with issue
34's checks on both (``checks``).

CPU and OpenBLAS: a threaded BLAS product leaves OpenBLAS's worker threads spinning on their
cores for about 0.1 s, which counts as the process's CPU. The default embedder's products are
made in blocks OpenBLAS keeps on the calling thread (``stores/blas_threads.py``);
``OPENBLAS_NUM_THREADS`` in the environment still sets every other product's threads. The
table says which it ran with.
"""

from __future__ import annotations

import itertools
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, SummarizationMiddleware
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatResult
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from langgraph_topics.middleware import TopicMemoryMiddleware
from langgraph_topics.middleware.fakes import ToolCallingFakeModel
from langgraph_topics.middleware.request_tokens import request_tokens
from langgraph_topics.tokens import TokenCounter
from langgraph_topics.tokens.counting import default_token_counter

Progress = Callable[[str], None]
VARIANTS = ("topic-memory", "summarization", "none")

_SUBJECTS = {
    "sourdough": "starter flour hydration loaf crumb proofing oven dough levain banneton",
    "kyoto": "temple ryokan shrine train gion april osaka nara kimono matcha",
    "running": "marathon pace shoes intervals tempo knee stretching mileage hills cadence",
    "garden": "tomato compost seedlings mulch watering aphids soil basil trellis pruning",
    "guitar": "chord fret strumming capo tuning scale pick strings barre arpeggio",
    "taxes": "deduction receipt invoice refund filing income pension audit bracket allowance",
}
_FILLER = (
    "You are a careful assistant for a long-running personal conversation. Answer in plain "
    "language, keep answers short unless asked for detail, cite what the user told you earlier "
    "when it matters, never invent facts, ask when a request is ambiguous, use the tools when "
    "a question needs reference notes, and keep a friendly, calm tone. "
)


@dataclass(frozen=True)
class Fact:
    """A fact the user states at ``planted`` and asks about at ``asked``."""

    planted: int
    asked: int
    statement: str
    question: str
    key: str
    """The text that must reach the model at the recall turn."""


@dataclass(frozen=True)
class AgentBenchConfig:
    """What ``bench agent`` runs (the issue's setup by default)."""

    turns: int = 300
    tool_every: int = 7
    budget: int = 2000
    system_tokens: int = 1431
    keep: int = 20
    """``SummarizationMiddleware``'s kept messages (its trigger is ``budget`` tokens)."""
    keep_recent: int | None = None
    """The memory's ``Settings.keep_recent`` (None: the package default, 20)."""
    messages: int | None = 10_000
    """The long thread's history (then ``tail_turns`` agent turns), or None: no long thread."""
    tail_turns: int = 30
    embedder: str = "use"
    """``use`` (the package's default embedder) or ``hash`` (instant, meaningless vectors)."""
    variants: tuple[str, ...] = VARIANTS
    facts: tuple[Fact, ...] = field(
        default=(
            Fact(3, 290, "By the way, my locker code is 4917.", "What was my locker code?", "4917"),
            Fact(
                60,
                295,
                "My sister Marisol moved to Tromsø last spring.",
                "Where did my sister move to?",
                "Tromsø",
            ),
        )
    )

    cpu_over_none_ms: float = 25.0
    """Issue 34: the memory's median CPU per model call over no middleware, at most."""
    long_cpu_over_none_ms: float = 50.0
    """The same on the long thread."""

    def __post_init__(self) -> None:
        if self.turns <= 0 or self.tool_every <= 0 or self.budget <= 0:
            raise ValueError("turns, tool_every and budget must be positive")
        if self.messages is not None and self.messages <= 0:
            raise ValueError(f"messages must be positive, got {self.messages}")
        if self.tail_turns <= 0:
            raise ValueError(f"tail_turns must be positive, got {self.tail_turns}")
        if self.embedder not in ("use", "hash"):
            raise ValueError(f"embedder must be 'use' or 'hash', got {self.embedder!r}")
        unknown = set(self.variants) - set(VARIANTS)
        if unknown:
            raise ValueError(f"unknown variants: {', '.join(sorted(unknown))}")


def user_text(turn: int, config: AgentBenchConfig) -> str:
    """The user's message of ``turn`` (a planted fact, a question, or small talk on a subject)."""
    for fact in config.facts:
        if turn == fact.planted:
            return fact.statement
        if turn == fact.asked:
            return fact.question
    names = list(_SUBJECTS)
    subject = names[(turn // 10) % len(names)]
    words = _SUBJECTS[subject].split()
    k = turn % 10
    text = f"About {subject}: {words[k]}, {words[(k + 3) % 10]} and {words[(k + 7) % 10]}?"
    if turn % config.tool_every == 0:
        text += " Please look up the details."
    return text


def system_prompt(tokens: int, counter: TokenCounter) -> str:
    """An instruction text of exactly ``tokens`` tokens by ``counter`` (or just under)."""
    text = _FILLER * (tokens // max(1, counter(_FILLER)) + 2)
    low, high = 0, len(text)
    while low < high:  # the longest prefix within the count
        middle = (low + high + 1) // 2
        if counter(text[:middle]) <= tokens:
            low = middle
        else:
            high = middle - 1
    return text[:low]


@tool
def lookup(query: str) -> str:
    """Look the question up in the reference notes."""
    return f"Reference notes on {query[:80]}: see chapter {len(query) % 9 + 1}."


class _MeasuredModel(ToolCallingFakeModel):
    """The tool-calling fake, also recording each request's tokens and the CPU clock."""

    counter: Any = None
    requests: list[int] = Field(default_factory=list)
    ends: list[float] = Field(default_factory=list)
    measuring: list[float] = Field(default_factory=list)
    """The CPU each call spent counting its request (the bench's, not the agent's)."""

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        start = time.process_time()
        system = messages[0] if messages and isinstance(messages[0], SystemMessage) else None
        rest = messages[1:] if system is not None else messages
        self.requests.append(request_tokens(system, rest, kwargs.get("tools") or [], self.counter))
        self.measuring.append(time.process_time() - start)
        result = super()._generate(messages, stop, run_manager, **kwargs)
        self.ends.append(time.process_time())
        return result


def pairing_problems(messages: Sequence[BaseMessage]) -> int:
    """Tool calls without a result and results without a call before them, in one request."""
    calls: set[str] = set()
    answered: set[str] = set()
    problems = 0
    for message in messages:
        if isinstance(message, AIMessage):
            calls.update(call["id"] or "" for call in message.tool_calls)
        elif isinstance(message, ToolMessage):
            if message.tool_call_id not in calls:
                problems += 1
            answered.add(message.tool_call_id)
    return problems + len(calls - answered)


def _history(config: AgentBenchConfig, count: int) -> list[BaseMessage]:
    """``count`` messages of earlier conversation (facts planted early, as in the turns)."""
    messages: list[BaseMessage] = []
    for turn in itertools.count():
        if len(messages) >= count:
            break
        text = user_text(turn, config).replace(" Please look up the details.", "")
        messages.append(HumanMessage(text, id=f"history-{turn:06d}-u"))
        messages.append(AIMessage(f"Noted: {text}", id=f"history-{turn:06d}-a"))
    return messages[:count]


def _memory(path: Path, config: AgentBenchConfig) -> Any:
    from langgraph_topics import Settings, TopicMemory

    settings = Settings(data_dir=path, budget_tokens=config.budget)
    if config.keep_recent is not None:
        settings = replace(settings, keep_recent=config.keep_recent)
    if config.embedder == "use":
        return TopicMemory(settings=settings)
    from langgraph_topics.bench.fakes import HashEmbedder
    from langgraph_topics.roles.native import native_roles

    embedder = HashEmbedder()
    return TopicMemory(settings=settings, roles=native_roles(embedder, settings), embedder=embedder)


def run_variant(
    variant: str,
    config: AgentBenchConfig,
    workdir: Path,
    progress: Progress,
    *,
    long: bool = False,
) -> dict[str, Any]:
    """Run the conversation (``long``: the long thread) through one agent; its figures."""
    counter = default_token_counter()
    prompt = system_prompt(config.system_tokens, counter)
    model = _MeasuredModel(triggers={"look up": "lookup"}, counter=counter)
    middleware: list[AgentMiddleware[Any, Any, Any]] = []
    memory = None
    if variant == "topic-memory":
        memory = _memory(workdir / "memory", config)
        middleware = [TopicMemoryMiddleware(memory)]
    elif variant == "summarization":
        summarizer = GenericFakeChatModel(
            messages=itertools.repeat(AIMessage("Summary: the user talked about hobbies."))
        )
        middleware = [
            SummarizationMiddleware(
                summarizer, trigger=("tokens", config.budget), keep=("messages", config.keep)
            )
        ]
    agent = create_agent(
        model, [lookup], system_prompt=prompt, middleware=middleware, checkpointer=InMemorySaver()
    )
    run: RunnableConfig = {"configurable": {"thread_id": "bench"}}
    turns = range(config.turns)
    history: list[BaseMessage] = []
    if long and config.messages:
        history = _history(config, config.messages)
        start = time.perf_counter()
        if memory is not None:
            memory.import_messages("bench", history)
        else:
            agent.update_state(run, {"messages": history})
        progress(
            f"  {variant}: {len(history)} messages of history"
            f" in {time.perf_counter() - start:.1f} s"
        )
        first = len(history) // 2
        turns = range(first, first + config.tail_turns)
    cpu: list[float] = []
    recall: dict[str, bool] = {}
    pairing = 0
    asked = {f.asked: f for f in config.facts}
    wall = time.perf_counter()
    for turn in turns:
        text = user_text(turn, config)
        if history and turn == turns[-1]:
            text = config.facts[0].question  # the earliest fact, from far back in the history
        before = len(model.calls)
        start = time.process_time()
        agent.invoke(cast(Any, {"messages": [HumanMessage(text)]}), run)
        end = time.process_time()
        marks = [start, *model.ends[before:]]
        spans = itertools.pairwise(marks)
        costs = [b - a - m for (a, b), m in zip(spans, model.measuring[before:], strict=True)]
        if costs:
            costs[-1] += end - marks[-1]
        cpu.extend(costs)
        sent = model.calls[before:]
        pairing += sum(pairing_problems(m) for m in sent)
        fact = asked.get(turn) if not history else None
        if history and turn == turns[-1]:
            fact = config.facts[0]
        if fact is not None:
            recall[fact.key] = any(fact.key in _request_text(m) for m in sent)
        if (turn + 1) % 50 == 0:
            progress(f"  {variant}: turn {turn + 1}, {len(model.calls)} model calls")
    tokens = model.requests
    report: dict[str, Any] = {
        "variant": variant,
        "turns": len(turns),
        "model_calls": len(model.calls),
        "tokens_median": int(statistics.median(tokens)),
        "tokens_max": max(tokens),
        "over_budget": sum(1 for t in tokens if t > config.budget),
        "cpu_ms_median": round(1000 * statistics.median(cpu), 2),
        "cpu_ms_p90": round(1000 * sorted(cpu)[int(0.9 * (len(cpu) - 1))], 2),
        "seconds": round(time.perf_counter() - wall, 1),
        "recall": recall,
        "pairing_problems": pairing,
    }
    if memory is not None:
        wait_idle = getattr(memory, "wait_idle", None)
        if wait_idle is not None:  # splits after the reply land before the check
            wait_idle("bench")
        check = memory.check("bench")
        report["memory_check_ok"] = check.ok
        memory.close()
    return report


def _request_text(messages: Sequence[BaseMessage]) -> str:
    return "\n".join(str(m.content) for m in messages)


def run_agent_bench(config: AgentBenchConfig, progress: Progress) -> dict[str, Any]:
    """Every variant on the conversation, then on the long thread, in this process."""
    counter = default_token_counter()
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-agent-") as scratch:
        for part, long in (("rows", False), ("long_rows", True)):
            if long and not config.messages:
                continue
            rows = []
            for variant in config.variants:
                progress(f"bench agent: {variant}" + (" (long thread)" if long else ""))
                workdir = Path(scratch) / f"{variant}{'-long' if long else ''}"
                rows.append(run_variant(variant, config, workdir, progress, long=long))
            _over_none(rows)
            report[part] = rows
    settings = {k: v for k, v in asdict(config).items() if k != "facts"}
    settings["system_prompt_tokens"] = counter(system_prompt(config.system_tokens, counter))
    settings["openblas_threads"] = os.environ.get("OPENBLAS_NUM_THREADS", "library default")
    return {
        "config": settings,
        "facts": [asdict(f) for f in config.facts],
        **report,
        "checks": agent_checks(report, config),
    }


def _over_none(rows: list[dict[str, Any]]) -> None:
    baseline = next((r for r in rows if r["variant"] == "none"), None)
    for row in rows:
        if baseline is not None:
            row["cpu_ms_over_none"] = round(row["cpu_ms_median"] - baseline["cpu_ms_median"], 2)


def agent_checks(report: dict[str, Any], config: AgentBenchConfig) -> dict[str, bool]:
    """Issue 34's acceptance figures of the memory's rows (the ones this run measured)."""
    checks: dict[str, bool] = {}
    for part, limit, name in (
        ("rows", config.cpu_over_none_ms, "turns"),
        ("long_rows", config.long_cpu_over_none_ms, "long thread"),
    ):
        memory = next((r for r in report.get(part, []) if r["variant"] == "topic-memory"), None)
        if memory is None:
            continue
        over = memory.get("cpu_ms_over_none")
        if over is not None:
            checks[f"{name}: cpu over none <= {limit:g} ms"] = over <= limit
        checks[f"{name}: every call within the budget"] = memory["over_budget"] == 0
        checks[f"{name}: facts quoted"] = bool(memory["recall"]) and all(memory["recall"].values())
        checks[f"{name}: tool pairing"] = memory["pairing_problems"] == 0
    return checks


def agent_table(report: dict[str, Any]) -> str:
    """The report as tables for people: the conversation, the long thread, the checks."""
    config = report["config"]
    lines = [
        f"bench agent: tool call every {config['tool_every']}th turn, budget "
        f"{config['budget']:,}, system prompt {config['system_prompt_tokens']:,} tokens, "
        f"embedder {config['embedder']}, OpenBLAS threads: {config['openblas_threads']}"
    ]
    sections = [(f"{config['turns']} turns", report.get("rows", []))]
    if report.get("long_rows"):
        size = f"{config['messages']:,}-message thread + {config['tail_turns']} turns"
        sections.append((size, report["long_rows"]))
    for title, rows in sections:
        lines += ["", title, *_row_lines(rows)]
    if report.get("checks"):
        lines += ["", "issue 34 checks (topic memory)"]
        lines += [f"  {'ok  ' if ok else 'FAIL'} {name}" for name, ok in report["checks"].items()]
    return "\n".join(lines)


def _row_lines(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        f"{'agent':<15}{'calls':>7}{'tokens med/max':>17}{'over':>6}{'cpu ms med':>12}"
        f"{'vs none':>9}{'p90':>9}  {'recall':<22}{'pairing':>8}{'s':>8}",
    ]
    for row in rows:
        recall = ",".join(f"{k}:{'yes' if v else 'no'}" for k, v in row["recall"].items())
        over = row.get("cpu_ms_over_none")
        lines.append(
            f"{row['variant']:<15}{row['model_calls']:>7}"
            f"{row['tokens_median']:>9,}/{row['tokens_max']:<7,}{row['over_budget']:>6}"
            f"{row['cpu_ms_median']:>12.1f}{'' if over is None else f'{over:+.1f}':>9}"
            f"{row['cpu_ms_p90']:>9.1f}  {recall:<22}"
            f"{row['pairing_problems']:>8}{row['seconds']:>8}"
        )
    return lines
