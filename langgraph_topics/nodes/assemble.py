"""Assemble the main window within the budget (seed 000 §5): one budgeted selection of evidence.

Every candidate piece has a value and a token cost: a quoted message (valued by its relevance,
which the topic window gives per reference), a quote's unit partner (for back ends that quote
without message-level scores), an older unsplit message (valued by the same evidence score),
a topic's brief, its summary and the lines of the summary's card (decisions with their
reasons, open items, key files). The last ``keep_recent`` messages and the instructions are
fixed. The budget left is filled by value across all topics, so a strong quote of a weaker
topic is kept before a weak quote of a stronger one; then the pieces are rendered grouped by
topic, topics by score (invariant 3), quotes in conversation order under their dates.

A quoted reply whose question is not quoted just above it gets a line naming the question (it
would read as the answer to the message above it); its cost counts when the reply is chosen.
With ``alternating_roles`` the chat part is whole exchanges opening with a user message
(``state/turn_order.py``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from langgraph.runtime import Runtime

from langgraph_topics.namespace.policy import NamespacePolicy
from langgraph_topics.namespace.window import NamespaceWindow
from langgraph_topics.prompts.card_lines import CardLineKind, card_lines
from langgraph_topics.prompts.language import detect_language
from langgraph_topics.prompts.main_window import (
    NOTE_LABELS,
    note_line,
    quote_cost,
    quote_day,
    render_earlier,
    render_system_prompt,
    render_topic_block,
    reply_note,
)
from langgraph_topics.retrieval.evidence import Evidence
from langgraph_topics.retrieval.search_window import SearchWindow, hit_ids
from langgraph_topics.retrieval.turn_evidence import turn_evidence
from langgraph_topics.roles.native.responder import NativeResponder
from langgraph_topics.runtime_protocols import uses_evidence
from langgraph_topics.scope.run_scope import scope_quotes_of
from langgraph_topics.scope.window import ScopeWindow
from langgraph_topics.services import TopicContext, TopicServices, services_of, thread_id_of
from langgraph_topics.state.records import (
    AssembledContext,
    MemorySearchRecord,
    SectionTokens,
    StoredMessage,
    TopicResult,
    TrimRecord,
    TurnEvent,
)
from langgraph_topics.state.schema import TopicState
from langgraph_topics.state.turn_order import leading_replies, unit_start
from langgraph_topics.state.turn_records import turn_records
from langgraph_topics.state.units import group_units, unit_in_store
from langgraph_topics.state.working_set import located_in_topics, recent_messages
from langgraph_topics.stores.protocols import TopicStore
from langgraph_topics.subtopics.families import family_heads, prior_families
from langgraph_topics.summaries.readable_briefs import first_readable_line
from langgraph_topics.tokens import TokenCounter
from langgraph_topics.tokens.message_counts import MessageTokens
from langgraph_topics.workflow.records import ActivePath
from langgraph_topics.workflow.render import fit_workflow_block, with_workflow_block

TRUNCATION_MARK = " …[shortened to fit the window; the full text is kept]"
SHORT_TRUNCATION_MARK = "…"
"""The mark of a recent message cut where even the full mark does not fit (one token): the last
``keep_recent`` messages stay in every window (invariant 2), at the smallest budgets as marks."""
BRIEF_FLOOR_CHARS = 120
"""A brief is shown by its first line, at most this long (the quotes carry the detail)."""
BRIEF_LINES_KEPT = 512
"""Briefs whose shown line is remembered: a few turns' candidate topics."""
SUMMARY_VALUE = 0.1
BRIEF_VALUE = 0.08
"""Values of a topic's summary and brief, as shares of its score: they fill what room the
evidence leaves (quotes are the exact evidence; summaries and briefs paraphrase it)."""
CARD_VALUES: dict[CardLineKind, float] = {"decision": 0.06, "unresolved": 0.05, "files": 0.04}
"""Values of a line of a topic's summary card, as shares of its score: under the brief's,
so that they take only the room the quotes, the summary and the brief leave (a decision
restates what messages said; the quotes are what they said)."""
PARTNER_SHARE = 0.5
"""A unit partner of a quote (its question, its answer) is worth this share of the quote."""
UNSPLIT_FALLBACK_VALUE = 0.3
"""Value of an older unsplit message when no evidence scores are at hand (newer ones first)."""
TRIM_RECORD_LIMIT = 50
"""The most valuable pieces that gave way are recorded (all of them are counted)."""
EVIDENCE_FLOOR = 0.3
"""Share of the room after the instructions that the recent messages leave to the evidence
(quotes, summaries, older unsplit messages) when there is any: at most budgets they take less
than the rest anyway; under an agent's long system prompt they would take it all."""
WORKFLOW_SHARE = 0.5
"""The workflow block (seed 001 T4) may take at most this share of the room the instructions
and the recent messages leave: it goes first, but the recalled evidence keeps the rest."""

PieceKind = Literal["quote", "unsplit", "summary", "brief", "decision", "unresolved", "files"]
QuestionOf = Callable[[str], StoredMessage | None]
"""The question a stored reply answers (the user message opening its exchange), if any."""


@dataclass(slots=True)
class _Piece:
    kind: PieceKind
    value: float
    cost: int
    topic_id: str = ""
    block: str = ""
    """The window block it is rendered in: its topic's, or for a subtopic its family's."""
    messages: list[StoredMessage] = field(default_factory=list)
    """The message(s) of a quote or unsplit piece: a tool call and its results are one piece."""
    order: tuple[str, int] = ("", 0)
    """Conversation order of a message piece: (timestamp, position); a card line's place."""
    line: str = ""
    """A card line's text, escaped."""
    sources: tuple[frozenset[str], ...] = ()
    """A card line's sources (``CardLine.sources``): shown in the window, they make it redundant."""

    @property
    def message(self) -> StoredMessage | None:
        """The first message of the piece (None for a brief or a summary)."""
        return self.messages[0] if self.messages else None


@dataclass
class _Selection:
    chosen: list[_Piece] = field(default_factory=list)
    given_way: list[_Piece] = field(default_factory=list)
    opened_topics: set[str] = field(default_factory=set)
    opened_days: set[tuple[str, str]] = field(default_factory=set)
    quoted: set[str] = field(default_factory=set)
    """Ids of the messages the chosen quotes show."""
    shown: set[str] = field(default_factory=set)
    """Ids of every message the window shows so far: recent, chosen unsplit and quoted."""

    def restates(self, piece: _Piece) -> bool:
        """Whether a card line only says what messages already in the window say verbatim."""
        return bool(piece.sources) and all(group & self.shown for group in piece.sources)


@dataclass(frozen=True)
class _Blocks:
    """The window's topic blocks: one per topic, one per family of subtopics (seed 000 §8).

    Subtopics of one divided topic are rendered under their root's name and brief, as the
    topic was before it was divided: the quotes are the same, the window pays one header.
    """

    results: Mapping[str, TopicResult]
    heads: Mapping[str, TopicResult]
    """Each block's header: a topic's own result, or its family's root as a result."""
    members: Mapping[str, list[str]]
    """Each block's topics, best first."""
    block_of: Mapping[str, str]

    @property
    def order(self) -> list[str]:
        """The blocks, best first (a family by its best subtopic)."""
        return list(self.heads)

    def of(self, topic_id: str) -> str:
        """The block a topic's pieces go to."""
        return self.block_of.get(topic_id, topic_id)

    @classmethod
    def of_results(
        cls, ranked: Sequence[TopicResult], family_heads: Mapping[str, TopicResult]
    ) -> _Blocks:
        """Blocks of ``ranked`` (best first); ``family_heads`` names a subtopic's family."""
        heads: dict[str, TopicResult] = {}
        members: dict[str, list[str]] = {}
        block_of: dict[str, str] = {}
        for result in ranked:
            topic_id = result["topic_id"]
            family = family_heads.get(topic_id)
            block = family["topic_id"] if family is not None else topic_id
            block_of[topic_id] = block
            if block not in heads:
                head = result if family is None else family
                heads[block] = {**head, "relevance_score": result["relevance_score"]}
            members.setdefault(block, []).append(topic_id)
        return cls(
            results={r["topic_id"]: r for r in ranked},
            heads=heads,
            members=members,
            block_of=block_of,
        )


# Worked out for every candidate topic of every turn (~50 µs each), while a brief changes only
# when its topic is split into or reviewed: the last turns' lines are kept.
@functools.lru_cache(maxsize=BRIEF_LINES_KEPT)
def brief_line(brief: str) -> str:
    """What a topic block shows of a brief: its first readable line (no greetings, reactions)."""
    return clip_line(first_readable_line(brief))


def clip_line(text: str, limit: int = BRIEF_FLOOR_CHARS) -> str:
    """The first line of a text, at most ``limit`` characters."""
    line = text.strip().split("\n", 1)[0]
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _shorten(
    message: StoredMessage, excess: int, counter: TokenCounter, mark: str = TRUNCATION_MARK
) -> StoredMessage:
    """Cut the end of a message's text so it takes ``excess`` fewer tokens (or all it can)."""
    text = message["content"]
    target = max(0, counter(text) - excess - counter(mark))
    low, high = 0, len(text)
    while low < high:  # longest prefix within the target
        middle = (low + high + 1) // 2
        if counter(text[:middle]) <= target:
            low = middle
        else:
            high = middle - 1
    return {**message, "content": text[:low] + mark}


def _fit_recent(
    recent: list[StoredMessage], room: int, tokens: MessageTokens, trimmed: list[TrimRecord]
) -> list[StoredMessage]:
    """Shorten the oldest recent messages until they fit ``room`` (they stay, by id).

    The full mark says what happened; where even messages cut to it do not fit (the smallest
    budgets: it takes 15 tokens, more than a short message), the oldest are cut again, from
    their whole text, to the one-token mark. A cut never makes a message longer.
    """
    counter = tokens.counter
    fitted = list(recent)
    total = sum(tokens(m) for m in fitted)
    records: dict[str, TrimRecord] = {}
    for mark in (TRUNCATION_MARK, SHORT_TRUNCATION_MARK):
        for index, whole in enumerate(recent):
            if total <= room:
                break
            if not whole["content"]:
                continue
            current = fitted[index]
            excess = total - room + tokens(whole) - tokens(current)  # measured from the whole
            shortened = _shorten(whole, excess, counter, mark)
            saved = tokens(current) - tokens(shortened)
            if saved <= 0:
                continue
            fitted[index] = shortened
            total -= saved
            record = records.setdefault(
                whole["id"], {"kind": "recent_truncated", "id": whole["id"], "tokens": 0}
            )
            record["tokens"] += saved
    trimmed.extend(records.values())
    return fitted


def _order_key(message: StoredMessage, evidence: Evidence | None) -> tuple[str, int]:
    position = evidence.position.get(message["id"], 0) if evidence is not None else 0
    return message.get("timestamp", ""), position


def _candidates(
    results: Sequence[TopicResult],
    blocks: _Blocks,
    unsplit: Sequence[StoredMessage],
    lookup: Mapping[str, StoredMessage],
    partners: Mapping[str, Sequence[StoredMessage]],
    exchanges: Mapping[str, list[StoredMessage]],
    placed: set[str],
    evidence: Evidence | None,
    tokens: MessageTokens,
    language: str = "en",
) -> list[_Piece]:
    """Every piece that could enter the window, each message once at its best value.

    ``results`` are best first. A block offers one brief (its head's) and one summary with
    its card's lines (its best topic's): a topic divided into subtopics costs the window what
    it cost undivided.
    """
    counter = tokens.counter
    brief_label, summary_label = NOTE_LABELS.get(language, NOTE_LABELS["en"])
    quotes: dict[str, _Piece] = {}

    def offer(message: StoredMessage, topic_id: str, value: float) -> None:
        if message["id"] in placed:
            return
        known = quotes.get(message["id"])
        if known is None or value > known.value:
            quotes[message["id"]] = _Piece(
                "quote",
                value,
                quote_cost(message, counter),
                topic_id,
                blocks.of(topic_id),
                [message],
                _order_key(message, evidence),
            )

    pieces: list[_Piece] = []
    noted: set[str] = set()
    for result in results:
        topic_id = result["topic_id"]
        block = blocks.of(topic_id)
        relevance = result.get("reference_relevance") or []
        ids = result["referenced_message_ids"]
        for place, message_id in enumerate(ids):
            message = lookup.get(message_id)
            if message is None:
                continue
            value = relevance[place] if place < len(relevance) else result["relevance_score"]
            offer(message, topic_id, value)
            for partner in partners.get(message_id, ()):
                offer(partner, topic_id, PARTNER_SHARE * value)
        if block in noted:
            continue
        noted.add(block)
        score = result["relevance_score"]
        if result["summary"]:
            cost = counter(note_line(summary_label, result["summary"]) + "\n")
            pieces.append(_Piece("summary", SUMMARY_VALUE * score, cost, topic_id, block))
        brief = brief_line(blocks.heads[block]["brief"])
        if brief:
            cost = counter(note_line(brief_label, brief) + "\n")
            pieces.append(_Piece("brief", BRIEF_VALUE * score, cost, topic_id, block))
        card = result.get("summary_card") if result["summary"] else None
        for line in card_lines(card, language) if card else ():
            pieces.append(
                _Piece(
                    line.kind,
                    CARD_VALUES[line.kind] * score,
                    counter(line.text + "\n"),
                    topic_id,
                    block,
                    order=("", line.index),
                    line=line.text,
                    sources=line.sources,
                )
            )
    pieces.extend(_whole_exchanges(list(quotes.values()), exchanges, tokens))
    unsplit_pieces: list[_Piece] = []
    # One look-up of each message's place in the scores gives its value and its order (what
    # ``relevance_of`` and ``_order_key`` would each look up again), and one read their values.
    positions = evidence.position if evidence is not None else {}
    found = [positions.get(message["id"]) for message in unsplit]
    scored = [p for p in found if p is not None]
    values = iter(
        evidence.relevance[np.asarray(scored, dtype=np.int64)].tolist()
        if evidence is not None and scored
        else []
    )
    for place, (message, position) in enumerate(zip(unsplit, found, strict=True)):
        if position is not None:
            value = next(values)
        else:
            value = UNSPLIT_FALLBACK_VALUE * (place + 1) / len(unsplit)
        unsplit_pieces.append(
            _Piece(
                "unsplit",
                value,
                tokens(message),
                messages=[message],
                order=(message.get("timestamp", ""), 0 if position is None else position),
            )
        )
    pieces.extend(_whole_exchanges(unsplit_pieces, tool_exchanges(unsplit), tokens))
    return pieces


def tool_exchanges(messages: Sequence[StoredMessage]) -> dict[str, list[StoredMessage]]:
    """For every message of a tool exchange, the whole exchange: the call and its results.

    Invariant 8: a tool result never reaches the window without the call it answers (providers
    reject such a request), nor a call without its results.
    """
    exchanges: dict[str, list[StoredMessage]] = {}
    by_call: dict[str, list[StoredMessage]] = {}
    for message in messages:
        calls = [c.get("id") for c in message.get("tool_calls", [])]
        if calls:
            exchange = [message]
            for call_id in calls:
                if isinstance(call_id, str):
                    by_call[call_id] = exchange
            exchanges[message["id"]] = exchange
        elif message["role"] == "tool":
            found = by_call.get(message.get("tool_call_id", ""))
            if found is not None:
                found.append(message)
                exchanges[message["id"]] = found
            else:  # its call is not among these messages
                exchanges[message["id"]] = []
    return exchanges


def _whole_exchanges(
    pieces: list[_Piece], exchanges: Mapping[str, list[StoredMessage]], tokens: MessageTokens
) -> list[_Piece]:
    """Merge the pieces of one tool exchange into one piece holding all of it.

    The merged piece is worth its best member; a tool message whose exchange is unknown is
    left out rather than shown without its call.
    """
    kept: list[_Piece] = []
    merged: dict[str, _Piece] = {}
    for piece in pieces:
        message = piece.message
        if message is None or (message["role"] != "tool" and not message.get("tool_calls")):
            kept.append(piece)
            continue
        exchange = exchanges.get(message["id"])
        if not exchange:
            continue
        key = exchange[0]["id"]
        known = merged.get(key)
        if known is None:
            cost = sum(
                tokens(m) if piece.kind == "unsplit" else quote_cost(m, tokens.counter)
                for m in exchange
            )
            merged[key] = _Piece(
                piece.kind,
                piece.value,
                cost,
                piece.topic_id,
                piece.block,
                list(exchange),
                piece.order,
            )
        elif piece.value > known.value:
            known.value = piece.value
    return kept + list(merged.values())


def _select(
    pieces: list[_Piece],
    room: int,
    header_cost: Callable[[str], int],
    day_cost: Callable[[str], int],
    note_cost: Callable[[StoredMessage, set[str]], int] | None = None,
    shown: Iterable[str] = (),
) -> _Selection:
    """Take pieces by value (conversation order breaks ties) while they fit ``room``.

    A piece that opens a block pays for the block's header, a quote that opens a day within
    its block pays for the date line, a reply whose question is not quoted yet for the note
    naming it (``note_cost``). A card line whose sources the window already shows (``shown``:
    the recent messages; then every message chosen) is not taken: the same thing twice.
    """
    selection = _Selection(shown=set(shown))
    used = 0
    for piece in sorted(pieces, key=lambda p: (-p.value, p.order)):
        extra = 0
        day = ""
        if piece.sources and selection.restates(piece):
            continue
        if used + piece.cost > room:
            # What it would open costs more still: no need to price the header, day or note
            # (a note looks its question up in the store), for each of a long tail of quotes.
            selection.given_way.append(piece)
            continue
        if piece.kind != "unsplit":
            if piece.block not in selection.opened_topics:
                extra += header_cost(piece.block)
            if piece.kind == "quote" and piece.message is not None:
                day = quote_day(piece.message)
                if day and (piece.block, day) not in selection.opened_days:
                    extra += day_cost(day)
                if note_cost is not None:
                    extra += note_cost(piece.message, selection.quoted)
        if used + piece.cost + extra > room:
            selection.given_way.append(piece)
            continue
        used += piece.cost + extra
        selection.chosen.append(piece)
        if piece.kind == "quote":
            selection.quoted.update(m["id"] for m in piece.messages)
        selection.shown.update(m["id"] for m in piece.messages)
        if piece.kind != "unsplit":
            selection.opened_topics.add(piece.block)
            if day:
                selection.opened_days.add((piece.block, day))
    # A quote taken after a card line (worth more than the line, costing more than the room
    # left when the line came) can show its sources all the same: the line goes.
    selection.chosen = [p for p in selection.chosen if not selection.restates(p)]
    return selection


def _render(
    blocks: _Blocks,
    chosen: Sequence[_Piece],
    language: str,
    prompt_dir: Path | None,
    workflow_block: str = "",
    question_of: QuestionOf | None = None,
    earlier: Sequence[StoredMessage] = (),
) -> tuple[str, list[StoredMessage], list[str]]:
    """The system prompt, the quoted messages (in rendered order) and the topics shown.

    Blocks go best first; the topics shown are listed block by block, best first in each.
    ``earlier``: recent replies the chat part must not open with, quoted after the blocks.
    """
    rendered: list[str] = []
    quoted: list[StoredMessage] = []
    shown: list[str] = []
    # The chosen pieces of each block, in chosen order: one pass instead of one per block.
    by_block: dict[str, list[_Piece]] = {}
    for piece in chosen:
        if piece.kind != "unsplit":
            by_block.setdefault(piece.block, []).append(piece)
    for block in blocks.order:
        mine = by_block.get(block)
        if not mine:
            continue
        quotes = sorted((p for p in mine if p.kind == "quote"), key=lambda p: p.order)
        messages = [m for p in quotes for m in p.messages]
        questions: dict[str, StoredMessage] = {}
        if question_of is not None:
            for piece in quotes:
                first = piece.messages[0]
                question = question_of(first["id"]) if is_answer(first) else None
                if question is not None:
                    questions[first["id"]] = question
        summaries = [blocks.results[p.topic_id]["summary"] for p in mine if p.kind == "summary"]
        card = [p.line for p in sorted((p for p in mine if p.line), key=lambda p: p.order)]
        head = blocks.heads[block]
        rendered.append(
            render_topic_block(
                head,
                messages,
                language,
                prompt_dir,
                brief=brief_line(head["brief"]) if any(p.kind == "brief" for p in mine) else "",
                summary=summaries[0] if summaries else "",
                questions=questions,
                card=card,
            )
        )
        quoted.extend(messages)
        members = {p.topic_id for p in mine}
        shown.extend(t for t in blocks.members[block] if t in members)
    if earlier:
        rendered.append(render_earlier(earlier, language))
        quoted.extend(earlier)
    system_prompt = render_system_prompt(rendered, language, prompt_dir)
    return with_workflow_block(workflow_block, system_prompt), quoted, shown


def _trim_record(piece: _Piece) -> TrimRecord:
    kinds: dict[PieceKind, Any] = {
        "quote": "referenced_message",
        "unsplit": "unsplit_message",
        "summary": "topic_summary",
        "brief": "topic_brief",
        "decision": "topic_card_line",
        "unresolved": "topic_card_line",
        "files": "topic_card_line",
    }
    identifier = piece.message["id"] if piece.message is not None else piece.topic_id
    return {"kind": kinds[piece.kind], "id": identifier, "tokens": piece.cost}


def assemble_window(
    working: Sequence[StoredMessage],
    located: dict[str, str],
    results: Sequence[TopicResult],
    lookup: dict[str, StoredMessage],
    *,
    budget: int,
    keep_recent: int,
    reference_threshold: float,
    language: str,
    counter: TokenCounter,
    prompt_dir: Path | None = None,
    evidence: Evidence | None = None,
    partners: Mapping[str, Sequence[StoredMessage]] | None = None,
    exchanges: Mapping[str, list[StoredMessage]] | None = None,
    workflow: ActivePath | None = None,
    family_heads: Mapping[str, TopicResult] | None = None,
    question_of: QuestionOf | None = None,
    alternate: bool = False,
) -> AssembledContext:
    """Build the main window: the best evidence that fits, the unsplit and recent messages.

    Args:
        working: The working set, in conversation order (the newest message last).
        located: Working-set ids already split (shown neither as unsplit nor as quotes).
        results: This turn's topic results.
        lookup: The referenced messages (and partners) by id.
        budget: The window's token budget (never exceeded).
        keep_recent: How many of the newest messages are always in the window.
        reference_threshold: Results scoring under it are not shown.
        language: Prompt language.
        counter: Token counter.
        prompt_dir: Prompt overrides.
        evidence: Message scores of this turn (values the older unsplit messages).
        partners: Unit partners of a referenced message, offered at half its value.
        exchanges: For referenced tool calls and results, their whole exchange (see
            :func:`tool_exchanges`); a referenced tool message without one is not quoted.
        workflow: The active path of the thread's workflow, rendered on top of the system
            prompt at the richest detail that fits ``WORKFLOW_SHARE`` of the room left.
        family_heads: For each subtopic, its family's root as a result (name, brief, file):
            a family's subtopics are one block under it (see :class:`_Blocks`).
        question_of: The question a stored reply answers: a quoted reply without its
            question just above it gets a note naming it (None: no notes).
        alternate: Make the chat part open with a user message and keep older messages in
            whole exchanges (``Settings.alternating_roles``, ``state/turn_order.py``).

    Returns:
        The assembled context; ``trimmed`` lists the most valuable pieces that gave way.
    """
    tokens = MessageTokens(counter)
    base_prompt = render_system_prompt([], language, prompt_dir)
    base_tokens = counter(base_prompt)
    recent = recent_messages(working, keep_recent)
    if alternate and recent:
        # The fixed part opens with the question of its first exchange when that fits whole
        # beside the evidence's floor; else the replies before it are quoted (below).
        start = unit_start(working, len(working) - len(recent))
        whole = budget - base_tokens - int(EVIDENCE_FLOOR * (budget - base_tokens))
        if sum(tokens(m) for m in working[start:]) <= whole:
            recent = list(working[start:])
    older = working[: len(working) - len(recent)]
    unsplit = [m for m in older if m["id"] not in located]
    placed = {m["id"] for m in recent}
    ranked = sorted(
        (
            r
            for r in results
            if r["relevance_score"] >= reference_threshold
            and (r["referenced_message_ids"] or r["summary"])
        ),
        key=lambda r: (-r["relevance_score"], r["topic_id"]),
    )
    trimmed: list[TrimRecord] = []
    # Replies before any question the window shows (a thread opening with a greeting, an
    # exchange whose question did not fit) cannot open the chat part: they are quoted in the
    # system prompt under a header of their own, still recent (invariant 2).
    lead = leading_replies(recent) if alternate else 0
    header = counter(render_earlier([], language)) if lead else 0
    # A tight window (an agent's own prompt and tools take most of the budget) would go to the
    # recent messages alone: the oldest of them are shortened (never dropped, invariant 2) so
    # that recalled evidence keeps a floor: the largest of a few that leaves the newest whole.
    floor = int(EVIDENCE_FLOOR * (budget - base_tokens)) if ranked or unsplit else 0
    for share in (floor, floor // 2, floor // 4, 0):
        floored: list[TrimRecord] = []
        fitted = _fit_recent(recent, budget - base_tokens - header - share, tokens, floored)
        if not share or not recent or fitted[-1] is recent[-1]:
            break
    trimmed.extend(floored)
    recent = fitted
    recent_tokens = sum(tokens(m) for m in recent)
    room = budget - base_tokens - header - recent_tokens
    workflow_block, workflow_cost = "", 0
    if workflow is not None:
        workflow_block, workflow_cost = fit_workflow_block(
            workflow, int(max(0, room) * WORKFLOW_SHARE), counter, language, prompt_dir
        )
        room -= workflow_cost
    blocks = _Blocks.of_results(ranked, family_heads or {})

    headers: dict[str, int] = {}

    def header_cost(block: str) -> int:
        if block not in headers:
            rendered = render_topic_block(blocks.heads[block], [], language, prompt_dir)
            headers[block] = counter(rendered) + 1
        return headers[block]

    def day_cost(day: str) -> int:
        return counter(f"[{day}]\n")

    pieces = _candidates(
        ranked,
        blocks,
        unsplit,
        lookup,
        partners or {},
        exchanges or {},
        placed,
        evidence,
        tokens,
        language,
    )
    # Unsplit messages are not quoted again by a topic (a crash leaves no such overlap, but
    # a message must never appear twice).
    unsplit_ids = {m["id"] for m in unsplit}
    pieces = [
        p
        for p in pieces
        if p.kind == "unsplit" or p.message is None or p.message["id"] not in unsplit_ids
    ]
    if alternate:
        pieces = _whole_units(pieces, unsplit)
    notes: dict[str, int] = {}

    def note_cost(message: StoredMessage, quoted: set[str]) -> int:
        question = question_of(message["id"]) if question_of and is_answer(message) else None
        if question is None or question["id"] in quoted:
            return 0
        if question["id"] not in notes:
            notes[question["id"]] = counter(reply_note(question, language) + "\n")
        return notes[question["id"]]

    earlier = recent[:lead]

    def render(chosen: Sequence[_Piece], block: str) -> tuple[str, list[StoredMessage], list[str]]:
        return _render(blocks, chosen, language, prompt_dir, block, question_of, earlier)

    selection = _select(pieces, max(0, room), header_cost, day_cost, note_cost, placed)
    system_prompt, quoted, shown = render(selection.chosen, workflow_block)
    chosen_unsplit = sorted(
        (p for p in selection.chosen if p.kind == "unsplit"), key=lambda p: p.order
    )
    chat = [m for p in chosen_unsplit for m in p.messages] + recent[lead:]
    total = counter(system_prompt) + sum(tokens(m) for m in chat)
    # Costs were counted piece by piece; a tokenizer that merges across piece boundaries can
    # differ by a few tokens, so the least valuable pieces give way until the total fits.
    while total > budget and selection.chosen:
        dropped = min(selection.chosen, key=lambda p: (p.value, p.order))
        selection.chosen.remove(dropped)
        selection.given_way.append(dropped)
        system_prompt, quoted, shown = render(selection.chosen, workflow_block)
        chosen_unsplit = sorted(
            (p for p in selection.chosen if p.kind == "unsplit"), key=lambda p: p.order
        )
        chat = [m for p in chosen_unsplit for m in p.messages] + recent[lead:]
        total = counter(system_prompt) + sum(tokens(m) for m in chat)
    if total > budget and workflow_block:  # the block never pushes the window over the budget
        workflow_block, workflow_cost = "", 0
        system_prompt, quoted, shown = render(selection.chosen, "")
        total = counter(system_prompt) + sum(tokens(m) for m in chat)
    if total > budget and recent:
        # What piece-by-piece costs miss (replies quoted before the first question, a
        # tokenizer merging across pieces) at a budget the fixed part nearly fills: the recent
        # messages are shortened further, never dropped (invariant 2).
        room_left = sum(tokens(m) for m in recent) - (total - budget)
        recent = _fit_recent(recent, room_left, tokens, trimmed)
        recent_tokens = sum(tokens(m) for m in recent)
        earlier = recent[:lead]
        system_prompt, quoted, shown = render(selection.chosen, workflow_block)
        chat = [m for p in chosen_unsplit for m in p.messages] + recent[lead:]
    if workflow is not None:
        full = fit_workflow_block(workflow, budget, counter, language, prompt_dir)[1]
        if full > workflow_cost:
            trimmed.append(
                {
                    "kind": "workflow_block",
                    "id": workflow["workflow_id"],
                    "tokens": full - workflow_cost,
                }
            )

    given_way = sorted(selection.given_way, key=lambda p: -p.value)
    trimmed.extend(_trim_record(p) for p in given_way[:TRIM_RECORD_LIMIT])
    for result in ranked:
        if result["topic_id"] not in shown:
            trimmed.append({"kind": "topic_result", "id": result["topic_id"], "tokens": 0})
    system_tokens = counter(system_prompt)
    workflow_tokens = counter(with_workflow_block(workflow_block, "")) if workflow_block else 0
    unsplit_tokens = sum(tokens(m) for m in chat[: len(chat) - len(recent) + lead])
    if lead:  # quoted in the system prompt: counted there
        recent_tokens = sum(tokens(m) for m in recent[lead:])
    sections: SectionTokens = {
        "system": base_tokens,
        "topics": system_tokens - base_tokens - workflow_tokens,
        "unsplit": unsplit_tokens,
        "recent": recent_tokens,
    }
    if workflow is not None:
        sections["workflow"] = workflow_tokens
    context: AssembledContext = {
        "messages": chat,
        "referenced_messages": quoted,
        "message_ids": [m["id"] for m in [*quoted, *chat]],
        "recent_ids": [m["id"] for m in recent],
        "system_prompt": system_prompt,
        "tokens": system_tokens + unsplit_tokens + recent_tokens,
        "budget": budget,
        "sections": sections,
        "topic_ids": shown,
        "trimmed": trimmed,
        "given_way": len(selection.given_way),
    }
    if alternate:
        context["alternating"] = True
    return context


def _whole_units(pieces: list[_Piece], unsplit: Sequence[StoredMessage]) -> list[_Piece]:
    """The older unsplit pieces merged into whole exchanges, each opening with a user message.

    An exchange is worth its best message and costs all of them; one the working set holds
    without its question (a greeting opening the thread) is left out.
    """
    unit_of: dict[str, int] = {}
    for number, unit in enumerate(group_units(unsplit)):
        unit_of.update((m["id"], number) for m in unit)
    kept: list[_Piece] = []
    units: dict[int, _Piece] = {}
    for piece in pieces:
        if piece.kind != "unsplit" or piece.message is None:
            kept.append(piece)
            continue
        number = unit_of.get(piece.message["id"], -1)
        known = units.get(number)
        if known is None:
            units[number] = _Piece(
                "unsplit", piece.value, piece.cost, messages=list(piece.messages), order=piece.order
            )
            continue
        known.value = max(known.value, piece.value)
        known.cost += piece.cost
        known.messages.extend(piece.messages)
        known.order = min(known.order, piece.order)
    position = {m["id"]: place for place, m in enumerate(unsplit)}
    for whole in units.values():
        whole.messages.sort(key=lambda m: position.get(m["id"], 0))
        if whole.messages[0]["role"] == "user":
            kept.append(whole)
    return kept


def alternates(state: TopicState, services: TopicServices) -> bool:
    """Whether this window's chat part must open with a user message and alternate.

    ``Settings.alternating_roles``, or (None) whenever a model answers from the window: the
    application's (a turn in mode ``assemble``) or a responder other than the native one.
    """
    chosen = services.settings.alternating_roles
    if chosen is not None:
        return chosen
    return state.get("turn_mode") == "assemble" or not isinstance(
        services.roles.responder, NativeResponder
    )


def questions_in(store: TopicStore) -> QuestionOf:
    """The question of a stored reply, read once per message and window."""
    found: dict[str, StoredMessage | None] = {}

    def question_of(message_id: str) -> StoredMessage | None:
        if message_id not in found:
            unit = unit_in_store(store, message_id)
            opening = unit[0] if unit and unit[0]["role"] == "user" else None
            found[message_id] = opening if opening and opening["id"] != message_id else None
        return found[message_id]

    return question_of


def is_answer(message: StoredMessage) -> bool:
    """Whether a message is the assistant's answer to a user (its quote needs its question).

    A named speaker's turn (an imported dialogue between people: LoCoMo's two speakers are
    ``user`` and ``assistant`` by position only) is shown under its speaker's name, and what
    it answers, if anything, is the conversation's business: no note is written for it.
    """
    return message["role"] == "assistant" and not message.get("name")


def _unit_partners(
    results: Sequence[TopicResult], store: TopicStore
) -> dict[str, list[StoredMessage]]:
    """For each referenced message, the other messages of its unit (question, answers, tools)."""
    partners: dict[str, list[StoredMessage]] = {}
    for result in results:
        for message_id in result["referenced_message_ids"]:
            if message_id not in partners:
                unit = unit_in_store(store, message_id)
                partners[message_id] = [m for m in unit if m["id"] != message_id]
    return partners


def _search_groups(
    records: Sequence[MemorySearchRecord], working: Sequence[StoredMessage], store: TopicStore
) -> dict[str, list[StoredMessage]]:
    """For each message the searches found, what quoting it brings (invariant 8).

    The message itself; a tool call or result brings its whole exchange, and is left out
    when that is not complete where it is kept (the working set, or its unit in the store).
    """
    wanted = hit_ids(records)
    if not wanted:
        return {}
    held = {m["id"]: m for m in working}
    found = {**store.get_messages([i for i in wanted if i not in held]), **held}
    in_working: dict[str, list[StoredMessage]] | None = None
    groups: dict[str, list[StoredMessage]] = {}
    for message_id in wanted:
        message = found.get(message_id)
        if message is None:
            continue
        if message["role"] != "tool" and not message.get("tool_calls"):
            groups[message_id] = [message]
            continue
        if message_id in held:
            in_working = tool_exchanges(working) if in_working is None else in_working
            exchange = in_working.get(message_id, [])
        else:
            exchange = tool_exchanges(unit_in_store(store, message_id)).get(message_id, [])
        if exchange:
            groups[message_id] = list(exchange)
    return groups


def _can_search(
    state: TopicState, services: TopicServices, searched: int, *, elsewhere: bool = False
) -> bool:
    """Whether the responder may call ``search_memory`` in this window.

    In a chat turn answered by a model (the native responder never calls a tool), once part
    of the thread has left the window (it has topics) or, in user scope, where the user's
    other threads can be searched (``elsewhere``), while a search round is left: the
    activate loop's bound (``max_activation_rounds``) bounds the searches of a turn too.
    """
    return (
        state.get("turn_mode") == "chat"
        and (bool(state.get("topics")) or elsewhere)
        and searched < services.settings.max_activation_rounds
        and not isinstance(services.roles.responder, NativeResponder)
    )


def assemble(state: TopicState, runtime: Runtime[TopicContext]) -> dict[str, Any]:
    """Assemble this turn's main window from the topic results and the working set."""
    services = services_of(runtime)
    settings = services.settings
    thread_id = thread_id_of(runtime)
    stores = services.branch_stores(thread_id, state)
    store = stores.topic_store
    working = turn_records(state["messages"])
    results = list((state.get("topic_results") or {}).values())
    wanted = [i for r in results for i in r["referenced_message_ids"]]
    families = prior_families(state.get("topics") or {})
    # Which working-set messages are split: asked of the store once, for the evidence and
    # for the window (each message is a locked store call).
    located = located_in_topics((m["id"] for m in working), store)
    evidence = turn_evidence(services, stores, working, families, located)
    # Back ends that score every message (the native one) already value a quote's neighbours
    # on their own; a model's references are completed with their unit partners.
    partners: dict[str, list[StoredMessage]] = {}
    if not uses_evidence(services.roles.topic_window):
        partners = _unit_partners(results, store)
    lookup = store.get_messages(wanted)
    exchanges: dict[str, list[StoredMessage]] = {}
    for topic_id in {
        r["topic_id"]
        for r in results
        for i in r["referenced_message_ids"]
        if i in lookup and (lookup[i]["role"] == "tool" or lookup[i].get("tool_calls"))
    }:
        exchanges.update(tool_exchanges(store.messages(topic_id)))
    language = detect_language((m["content"] for m in working[-10:]), settings.language)
    counter = services.token_counter
    reads = list(state.get("namespace_reads") or [])
    request = state.get("namespace_request")
    if request:
        reads.append(request)
    # Large tool results enter every part of the window by reference and preview (seed 001
    # T2); a text the responder read this turn replaces its reference, in budget.
    namespace = NamespaceWindow(
        stores.namespace_store,
        NamespacePolicy.of(settings),
        language,
        settings.prompt_dir,
        reads=reads,
        can_read=len(reads) < settings.max_namespace_reads,
        preview_chars=settings.namespace_preview_chars,
        counting=[request] if request else [],
    )
    # The responder's searches this turn (``search_memory``): quoted after the window.
    searches = (state.get("memory_searches") or []) if state.get("turn_mode") == "chat" else []
    groups = _search_groups(searches, working, store)
    for calls in (*exchanges.values(), *partners.values(), *groups.values()):
        namespace.learn_calls(calls)
    working = namespace.views(working)
    lookup = {i: namespace.view(m) for i, m in lookup.items()}
    partners = {i: namespace.views(ms) for i, ms in partners.items()}
    exchanges = {i: namespace.views(ms) for i, ms in exchanges.items()}
    search = SearchWindow(
        searches,
        {i: namespace.views(ms) for i, ms in groups.items()},
        language,
        settings.prompt_dir,
        counter,
    )
    reserved = search.reserve(
        working, keep_recent=settings.keep_recent, budget=settings.budget_tokens
    )
    # The user's other threads (user scope): quoted at the end of the system prompt; without
    # quotes nothing is reserved and the window is the thread scope's, unchanged.
    scope_reading = scope_quotes_of(runtime)
    scope = ScopeWindow(scope_reading, language, settings.prompt_dir, counter)
    reserved_scope = scope.reserve(
        working, keep_recent=settings.keep_recent, budget=settings.budget_tokens - reserved
    )
    kept_free = namespace.prepare(
        working,
        keep_recent=settings.keep_recent,
        budget=settings.budget_tokens - reserved - reserved_scope,
        counter=counter,
    )
    context = assemble_window(
        working,
        located,
        results,
        lookup,
        budget=settings.budget_tokens - reserved - reserved_scope - kept_free,
        keep_recent=settings.keep_recent,
        reference_threshold=settings.reference_threshold,
        language=language,
        counter=counter,
        prompt_dir=settings.prompt_dir,
        evidence=evidence,
        partners=partners,
        exchanges=exchanges,
        workflow=state.get("workflow"),
        family_heads=family_heads((r["topic_id"] for r in results), families, store),
        question_of=questions_in(store),
        alternate=alternates(state, services),
    )
    context = namespace.finish(context, settings.budget_tokens - reserved - reserved_scope, counter)
    context = scope.finish(context, settings.budget_tokens - reserved)
    context = search.finish(context, settings.budget_tokens)
    if _can_search(state, services, len(searches), elsewhere=scope_reading.searches):
        context["can_search"] = True
    update: dict[str, Any] = {"context": context}
    if request:
        update |= {"namespace_reads": reads, "namespace_request": None}
    problems: list[TurnEvent] = [{"kind": "degraded", "detail": p} for p in namespace.problems]
    if problems:
        update["events"] = problems
    if context["given_way"]:
        kinds = sorted({t["kind"] for t in context["trimmed"]})
        event: TurnEvent = {
            "kind": "trimmed",
            "detail": f"{context['given_way']} pieces left"
            f" out to fit {settings.budget_tokens} tokens ({', '.join(kinds)})",
        }
        update["events"] = [*problems, event]
    return update
