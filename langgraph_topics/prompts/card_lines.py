"""A summary card's lines in its topic's main-window block (seed 001 T3, "consumption").

The decisions (each with its reason), the unresolved items and the key files of a topic result's
card reach the main model as short labelled lines in the topic's fenced block, in the prompt's
language; each line is one piece of the window's budgeted selection (``nodes/assemble.py``).
Their text comes from the conversation (a native card's facts are its own sentences, a model's
restate them), so it is escaped and kept to one line like a quote: history is data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from langgraph_topics.roles.llm.escaping import quote_text
from langgraph_topics.summaries.card import SummaryCard
from langgraph_topics.summaries.native import NO_REASON

CardLineKind = Literal["decision", "unresolved", "files"]
CARD_LABELS: dict[str, dict[str, str]] = {
    "en": {
        "decision": "Decided: {what}",
        "reason": "Decided: {what} (why: {why})",
        "unresolved": "Open: {item}",
        "files": "Files: {files}",
        "separator": ", ",
    },
    "zh": {
        "decision": "决定：{what}",
        "reason": "决定：{what}（原因：{why}）",
        "unresolved": "待定：{item}",
        "files": "文件：{files}",
        "separator": "、",
    },
}
"""How each kind of line reads, per prompt language."""
CARD_FACT_CHARS = 200
"""A fact's text is cut to this many characters: a model's card may run long, and the quotes
hold the full wording."""
CARD_FILES = 6
"""Files named on a block's files line, the card's first (a native card puts the most cited
first)."""
_REASONLESS = frozenset(NO_REASON.values())


@dataclass(frozen=True)
class CardLine:
    """One line of a card as the main window shows it."""

    kind: CardLineKind
    text: str
    """The line, escaped, on one line."""
    sources: tuple[frozenset[str], ...]
    """What the line restates, as groups of message ids: once every group has a message in the
    window, the line says nothing the window does not already show verbatim."""
    index: int
    """Its place among the card's lines (decisions, then open items, then files)."""


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= CARD_FACT_CHARS else text[: CARD_FACT_CHARS - 1].rstrip() + "…"


def card_lines(card: SummaryCard, language: str) -> list[CardLine]:
    """The lines of ``card`` a topic block may show: decisions, open items, one files line."""
    labels = CARD_LABELS.get(language, CARD_LABELS["en"])
    lines: list[CardLine] = []
    seen: set[str] = set()

    def add(kind: CardLineKind, text: str, sources: tuple[frozenset[str], ...]) -> None:
        if text not in seen:  # a model may state one fact twice; the window shows it once
            seen.add(text)
            lines.append(CardLine(kind, text, sources, len(lines)))

    for decision in card.get("decisions", []):
        what = _clip(decision["what"])
        if not what:
            continue
        why = _clip(decision.get("why", ""))
        # A reason the messages do not give, or one the decision's own sentence states (a
        # native card's reason is a clause of it), is no reason worth tokens.
        stated = bool(why) and why not in _REASONLESS and why not in what
        template = labels["reason"] if stated else labels["decision"]
        text = template.format(what=quote_text(what), why=quote_text(why))
        add("decision", text, tuple(frozenset({i}) for i in decision["message_ids"]))
    for open_item in card.get("unresolved", []):
        item = _clip(open_item["item"])
        if item:
            text = labels["unresolved"].format(item=quote_text(item))
            add("unresolved", text, tuple(frozenset({i}) for i in open_item["message_ids"]))
    files = [e for e in card.get("entities", []) if e["kind"] == "file" and e["name"].strip()]
    files = files[:CARD_FILES]
    if files:
        names = labels["separator"].join(quote_text(_clip(f["name"])) for f in files)
        # A file name shows wherever a message naming it is quoted: any one of them will do.
        named_in = tuple(frozenset(f["message_ids"]) for f in files)
        add("files", labels["files"].format(files=names), named_in)
    return lines
