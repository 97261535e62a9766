"""The responder's searches in its next window: each call, and its reply quoting the hits.

After a ``search_memory`` call the window is assembled again, leaving ``SEARCH_SHARE`` of the
room the instructions and the recent messages leave free; the call and its reply then go after
the chat part as a tool call and its result (invariant 8: never one without the other). The
reply quotes the hits' original messages as the topic blocks do: one escaped line each, with
its date and its topic, fenced in ``<q>…</q>``, in the order they were sent. The best hits are
chosen first, as many as fit; a hit the window already shows is not quoted again, a tool call
or result comes with the rest of its exchange, and the window stays within the budget
(invariant 6). A search that found nothing, or could not run, is answered in one line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from langgraph_topics.prompts.loader import load_prompt
from langgraph_topics.prompts.window_room import BlockAfterAssembly
from langgraph_topics.retrieval.search_request import SEARCH_MEMORY
from langgraph_topics.roles.llm.escaping import escape_label, quote_text
from langgraph_topics.state.records import (
    AssembledContext,
    MemorySearchRecord,
    MemorySearchRequest,
    SearchExchange,
    StoredMessage,
    TrimRecord,
)
from langgraph_topics.tokens import TokenCounter
from langgraph_topics.tokens.counting import message_tokens

SEARCH_SHARE = 0.5
"""Share of the room after the instructions and the recent messages that a turn's search
replies may take: the responder asked for them, the recalled evidence keeps the rest."""
SEARCH_FLOOR = 0.15
"""Share of the room after the instructions the replies keep however long the recent
messages are (they are shortened to leave it)."""
HITS = 8
"""Messages one reply quotes at most."""
QUERY_CHARS = 80
"""The query is repeated in the reply up to this long."""
MIN_QUOTE_TOKENS = 24
"""A hit longer than the room left is shortened to it, if at least this much is left."""
SHORTENED_MARK = " …[shortened]"
PROBLEMS = {
    "en": {
        "empty": "search_memory needs a few words to look for.",
        "long": "search_memory takes a few words, not {detail} characters; ask again, shorter.",
        "date": "search_memory: {detail} must be a date like 2023-05-08.",
        "failed": "search_memory could not search just now; answer from your context.",
        "room": "The messages matching {query} do not fit in the window; ask more precisely.",
    },
    "zh": {
        "empty": "search_memory 需要几个要查找的词。",
        "long": "search_memory 只接受几个词，而不是 {detail} 个字符；请缩短后再查。",
        "date": "search_memory：{detail} 须是形如 2023-05-08 的日期。",
        "failed": "search_memory 暂时无法检索；请根据已有的上下文回答。",
        "room": "与 {query} 匹配的消息放不进窗口；请查得更具体些。",
    },
}
"""One-line replies of a search that shows no message (the templates frame the others)."""


@dataclass
class SearchWindow(BlockAfterAssembly):
    """The turn's search records, the hits' messages, and how to quote them.

    Args:
        records: The responder's searches this turn, in order.
        groups: For each hit, the messages it brings: itself, or its whole tool exchange
            (missing: the message is no longer readable, or its exchange is incomplete).
        language: Reply language.
        prompt_dir: Prompt overrides.
        counter: Token counter.
    """

    records: Sequence[MemorySearchRecord]
    groups: Mapping[str, list[StoredMessage]]
    language: str
    prompt_dir: Path | None
    counter: TokenCounter
    trimmed: list[TrimRecord] = field(default_factory=list)

    ROOM_SHARE = SEARCH_SHARE
    ROOM_FLOOR = SEARCH_FLOOR

    def has_block(self) -> bool:
        """Whether the responder searched this turn."""
        return bool(self.records)

    def finish(self, context: AssembledContext, budget: int) -> AssembledContext:
        """``context`` with each search's call and reply after its chat part, in budget.

        The room is what the window leaves under ``budget``, shared by the searches in turn
        (a later one gets what an earlier one left). A call whose reply cannot fit even as one
        line is left out with its reply, and recorded in ``trimmed``.
        """
        if not self.records:
            return context
        shown = set(context["message_ids"])
        room = budget - context["tokens"]
        exchanges: list[SearchExchange] = []
        added: list[str] = []
        spent = 0
        for number, record in enumerate(self.records):
            call = _call_message(record)
            frame = message_tokens(call, self.counter) + message_tokens(
                _reply_message(record, ""), self.counter
            )
            left = room - spent
            share = left // (len(self.records) - number)
            reply, ids = self._reply(record, shown, share - frame)
            cost = frame + self.counter(reply)
            if not reply or cost > left:
                self.trimmed.append({"kind": "search_reply", "id": record["call_id"], "tokens": 0})
                continue
            exchanges.append(
                {
                    "call_id": record["call_id"],
                    "args": _args(record["request"]),
                    "reply": reply,
                    "message_ids": ids,
                }
            )
            shown.update(ids)
            added.extend(ids)
            spent += cost
        finished: AssembledContext = {
            **context,
            "message_ids": [*context["message_ids"], *added],
            "tokens": context["tokens"] + spent,
            "sections": {**context["sections"], "search": spent},
            "trimmed": [*context["trimmed"], *self.trimmed],
            "budget": budget,
        }
        if exchanges:
            finished["searches"] = exchanges
        return finished

    def _reply(
        self, record: MemorySearchRecord, shown: set[str], room: int
    ) -> tuple[str, list[str]]:
        """The reply to one search within ``room`` tokens, and the ids it quotes.

        ('', []) when not even a one-line reply fits.
        """
        problems = PROBLEMS.get(self.language, PROBLEMS["en"])
        query = _query_label(record["request"])
        if record.get("problem"):
            line = problems[record["problem"]].format(detail=record.get("problem_detail", ""))
            return (line, []) if self.counter(line) <= room else ("", [])
        fresh: list[tuple[str, list[StoredMessage]]] = []
        already = 0
        for hit in record["hits"]:
            group = self.groups.get(hit["message_id"])
            if not group:
                continue
            if any(m["id"] in shown for m in group):
                already += 1
                continue
            if all(m["id"] != other["id"] for _, g in fresh for other in g for m in group):
                fresh.append((hit["topic_name"], group))
        if not fresh:
            name = "memory_search_shown" if already else "memory_search_none"
            line = load_prompt(name, self.language, self.prompt_dir).render(query=query).strip()
            return (line, []) if self.counter(line) <= room else ("", [])
        template = load_prompt("memory_search_results", self.language, self.prompt_dir)
        frame = self.counter(template.render(query=query, quotes="")) + 1
        used = frame
        chosen: list[tuple[int, list[str]]] = []
        ids: list[str] = []
        for rank, (topic, group) in enumerate(fresh[:HITS]):
            lines = [_quote(m, topic) for m in group]
            cost = sum(self.counter(line) + 1 for line in lines)
            if used + cost > room and len(group) == 1:
                lines = [self._shortened(group[0], topic, room - used)]
                cost = self.counter(lines[0]) + 1 if lines[0] else room + 1
            if used + cost > room:
                continue
            used += cost
            chosen.append((rank, lines))
            ids.extend(m["id"] for m in group)
        if not chosen:
            line = problems["room"].format(query=query)
            return (line, []) if self.counter(line) <= room else ("", [])
        order = {m["id"]: _sent(m) for _, group in fresh for m in group}
        # Conversation order: a decision and its changes read in the order they happened.
        chosen.sort(key=lambda item: (order.get(fresh[item[0]][1][0]["id"], ""), item[0]))
        quotes = "\n".join(line for _, lines in chosen for line in lines)
        reply = template.render(query=query, quotes=quotes).strip()
        while self.counter(reply) > room and chosen:  # a tokenizer merging across lines
            dropped = chosen.pop()
            dropped_ids = {m["id"] for m in fresh[dropped[0]][1]}
            ids = [i for i in ids if i not in dropped_ids]
            quotes = "\n".join(line for _, lines in chosen for line in lines)
            reply = template.render(query=query, quotes=quotes).strip() if chosen else ""
        return reply, ids

    def _shortened(self, message: StoredMessage, topic: str, room: int) -> str:
        """The quote line of ``message`` cut to ``room`` tokens ('' under the minimum)."""
        if room - 1 < MIN_QUOTE_TOKENS:
            return ""
        text = message["content"]
        low, high = 0, len(text)
        while low < high:  # the longest prefix whose line fits
            middle = (low + high + 1) // 2
            cut: StoredMessage = {**message, "content": text[:middle] + SHORTENED_MARK}
            if self.counter(_quote(cut, topic)) + 1 <= room:
                low = middle
            else:
                high = middle - 1
        if low == 0:
            return ""
        return _quote({**message, "content": text[:low] + SHORTENED_MARK}, topic)


def hit_ids(records: Sequence[MemorySearchRecord]) -> list[str]:
    """Every message id the searches found, each once."""
    return list(dict.fromkeys(h["message_id"] for r in records for h in r["hits"]))


def _quote(message: StoredMessage, topic: str) -> str:
    """``[YYYY-MM-DD HH:MM] (topic) speaker: text``, escaped, on one line."""
    sent = _sent(message)[:16].replace("T", " ") or "undated"
    speaker = escape_label(message.get("name") or message["role"])
    where = f" ({escape_label(topic)})" if topic else ""
    return f"[{sent}]{where} {speaker}: {quote_text(message['content'])}"


def _sent(message: StoredMessage) -> str:
    return message.get("timestamp") or ""


def _args(request: MemorySearchRequest) -> dict[str, str]:
    args = {"query": request["query"][:QUERY_CHARS]}
    if request.get("since"):
        args["since"] = request.get("since", "")
    if request.get("until"):
        args["until"] = request.get("until", "")
    return args


def _query_label(request: MemorySearchRequest) -> str:
    """The query as the reply repeats it: quoted, escaped, clipped, with its period."""
    query = request["query"]
    if len(query) > QUERY_CHARS:
        query = query[: QUERY_CHARS - 1] + "…"
    label = f"“{escape_label(query)}”"
    since, until = request.get("since"), request.get("until")
    if since or until:
        label += f" ({escape_label(since or '…')} – {escape_label(until or '…')})"
    return label


def _call_message(record: MemorySearchRecord) -> StoredMessage:
    """The responder's call as a message (what it costs in the window)."""
    return {
        "id": record["call_id"],
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"name": SEARCH_MEMORY, "args": _args(record["request"]), "id": record["call_id"]}
        ],
    }


def _reply_message(record: MemorySearchRecord, reply: str) -> StoredMessage:
    return {
        "id": f"{record['call_id']}-reply",
        "role": "tool",
        "content": reply,
        "tool_call_id": record["call_id"],
    }
