"""Detect degenerate model output: text that loops, facts that are empty or repeated.

A model that falls into a repetition loop still produces well-formed JSON and XML, so format
checks let it through; these checks catch it, and the caller uses the native summary instead
(seed 001 T3, "退化检测"). The thresholds are loose on purpose: a real summary repeats a name
or a phrase now and then, a loop repeats whole runs of words many times.
"""

from __future__ import annotations

import re
from collections import Counter

from langgraph_topics.summaries.card import FACT_TEXT_KEYS, SummaryCard, card_facts

NGRAM = 4
"""Length of the runs compared (words; Chinese counts one character as one word)."""
MIN_TOKENS = 24
"""Shorter texts are too short to call a loop."""
LOOP_COVERAGE = 0.5
"""A text is a loop when runs seen at least ``LOOP_REPEATS`` times cover this share of it."""
LOOP_REPEATS = 3
REPEATED_LINES = 3
"""The same non-empty line this many times is a loop, however short the text."""

_TOKEN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|[^\W_]+", re.UNICODE)


def repetition(text: str) -> str | None:
    """Why ``text`` reads as a repetition loop, or None when it does not."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    line, times = Counter(lines).most_common(1)[0] if lines else ("", 0)
    if times >= REPEATED_LINES and len(line) > 1:
        return f"the line {line[:40]!r} repeats {times} times"
    tokens = [t.lower() for t in _TOKEN.findall(text)]
    if len(tokens) < MIN_TOKENS:
        return None
    grams = [tuple(tokens[i : i + NGRAM]) for i in range(len(tokens) - NGRAM + 1)]
    counts = Counter(grams)
    covered = [False] * len(tokens)
    for start, gram in enumerate(grams):
        if counts[gram] >= LOOP_REPEATS:
            for position in range(start, start + NGRAM):
                covered[position] = True
    share = sum(covered) / len(tokens)
    if share >= LOOP_COVERAGE:
        gram, times = counts.most_common(1)[0]
        return f"{share:.0%} of the text repeats itself ({' '.join(gram)!r} {times} times)"
    return None


def degeneration(card: SummaryCard) -> str | None:
    """Why a (schema-valid) card is degenerate, or None when it is usable.

    Degenerate: no fact at all, a fact whose text is blank, the same fact three times or more,
    or a text (or the facts read together) that loops.
    """
    facts = list(card_facts(card))
    if not facts:
        return "the card has no facts"
    seen: Counter[str] = Counter()
    for field_name, index, fact in facts:
        said = " ".join(str(fact.get(FACT_TEXT_KEYS[field_name], "")).split()).lower()
        if not said:
            return f"{field_name}.{index} is empty"
        seen[f"{field_name}:{said}"] += 1
    repeated, times = seen.most_common(1)[0]
    if times >= LOOP_REPEATS:
        return f"the fact {repeated.split(':', 1)[1][:40]!r} appears {times} times"
    looped = repetition(card["text"])
    if looped is not None:
        return f"text: {looped}"
    joined = "\n".join(
        str(fact.get(FACT_TEXT_KEYS[field_name], "")) for field_name, _, fact in facts
    )
    looped = repetition(joined)
    return None if looped is None else f"facts: {looped}"
