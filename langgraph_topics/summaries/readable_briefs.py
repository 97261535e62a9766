"""A brief as a person (or the main model) reads it: what the topic is about, no small talk.

A native brief is the topic's activation fingerprint (seed 000 §4.6): a keyword line and the
topic's sentences quoted as they were said, "Wow, Mel!" and "Thanks, Caroline!" included. The
splitter, the topic index and the router match new messages against exactly that text, and
cleaning it where it is stored regrouped topics and cost recall (issue 36). So the stored brief
stays the fingerprint and this module derives what is shown from it: the keyword line without
small talk, stop words or the speakers' names, each quoted sentence without the clauses that are
only a greeting, a reaction or a name, and a sentence that says nothing left out.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from langgraph_topics.keywords.small_talk import without_small_talk
from langgraph_topics.roles.native.text import split_sentences

KEYWORDS_PREFIX = "Keywords: "
"""How a native brief's first line starts (``NativeBriefWriter.compose_brief``)."""

_QUOTE = re.compile(r"^- (?P<role>[\w-]+): (?P<text>.*)$")
_WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?|\d+")
_CLAUSE_SEPARATOR = re.compile(r"((?<=[,;:!?.])\s+|(?<=[，、；：！？。…])\s*|\s+[-–—]+\s+)")
"""What ends a clause: a pause or stop and the space after it, or a dash between spaces."""
_CAPITALISED = re.compile(r"\b[A-Z][a-z]{2,}\b")
_TRAILING_PAUSE = re.compile(r"[,;:，、；：\s]+$")
_FINAL_STOP = re.compile(r"[.!?。！？…]+$")
_REACTIONS = frozenset(
    "wow glad happy good great cool nice awesome perfect wonderful amazing excellent lovely "
    "fantastic brilliant".split()
)
_CHINESE_REACTIONS = ("太好了", "太棒了", "真棒", "厉害", "开心", "高兴")
"""Small-talk words that react to what was said (from ``keywords.small_talk``'s lists)."""
_REACTION_SUBJECT_WORDS = 1
"""A clause with a reaction word and at most this many other content words is a reaction to
what was shown ("That photo is great!"); one with more says what it reacts to."""
_GREETINGS = frozenset("hi hello hey hiya thanks thank thx cheers bye goodbye welcome".split())
"""Words that address someone: with them, a capitalised word is the person addressed."""
_SHORT_NAME_CHARS = 3
"""A capitalised word this long or longer may be a speaker's short name (Mel for Melanie)."""


def readable_brief(brief: str, people: Collection[str] = ()) -> str:
    """``brief`` without greetings, reactions and the speakers' names.

    Args:
        brief: The stored brief (a native one, or any writer's prose).
        people: The thread's speakers' names: in a conversation between two people every
            sentence addresses one of them, so a name names no subject.

    Returns:
        The brief's lines that say something, each without its small-talk clauses; a line
        that is nothing but small talk is left out, and so is a repeated one.
    """
    names = _names_in(brief, people)
    kept: list[str] = []
    for line in brief.split("\n"):
        readable = _readable_line(line, names)
        if readable and readable not in kept:
            kept.append(readable)
    return "\n".join(kept)


def first_readable_line(brief: str, people: Collection[str] = ()) -> str:
    """The first line of :func:`readable_brief`, reading no further than it.

    A topic block's brief line is worked out for every candidate topic of every turn.
    """
    names = _names_in(brief, people)
    for line in brief.split("\n"):
        readable = _readable_line(line, names)
        if readable:
            return readable
    return ""


def _readable_line(line: str, names: frozenset[str]) -> str:
    if line.startswith(KEYWORDS_PREFIX):
        words = [w.strip() for w in line[len(KEYWORDS_PREFIX) :].split(",")]
        content = [w for w in words if w and not _says_nothing(w, names)]
        return KEYWORDS_PREFIX + ", ".join(content) if content else ""
    quoted = _QUOTE.match(line)
    if quoted is None:
        # Another writer's prose: its sentences are kept or left out whole.
        sentences = [s for s in split_sentences(line) if not _says_nothing(s, names)]
        return " ".join(sentences)
    text = quoted["text"].strip()
    if text.startswith("["):
        return line  # a shared photo's caption is what was shown, never small talk
    said = _without_small_talk_clauses(text, names)
    return f"- {quoted['role']}: {said}" if said else ""


def _without_small_talk_clauses(sentence: str, names: frozenset[str]) -> str:
    """The sentence's clauses that say something, as written, ending as the sentence ended."""
    parts = _CLAUSE_SEPARATOR.split(sentence)
    # Alternating clause, separator, clause, …: each clause keeps the separator after it.
    clauses = [
        (parts[i], parts[i + 1] if i + 1 < len(parts) else "") for i in range(0, len(parts), 2)
    ]
    clauses = [(clause, after) for clause, after in clauses if clause.strip()]
    kept = [
        (clause, after)
        for clause, after in clauses
        if not (
            _says_nothing(clause, names)
            or _is_reaction(clause, names)
            or (not names and _greets(clause))
        )
    ]
    if len(kept) == len(clauses):
        return sentence
    if not kept or (not names and _bare_address([clause for clause, _ in kept])):
        # "Wow, Mel!" with the speakers unknown: what is left after the greeting is the name.
        return ""
    text = _TRAILING_PAUSE.sub("", "".join(clause + after for clause, after in kept).strip())
    stop = _FINAL_STOP.search(sentence.rstrip())
    if stop and not _FINAL_STOP.search(text):
        text += stop.group(0)
    if kept[0] == clauses[0]:
        return text
    return text[:1].upper() + text[1:]  # a cut greeting began the sentence


def _greets(clause: str) -> bool:
    """Whether a clause greets or thanks someone by name ("Hey Mel", "Thanks Caroline")."""
    words = _WORD.findall(clause)
    named = [w for w in words if w.lower() not in _GREETINGS]
    greeted = len(named) < len(words)
    return greeted and len(named) == 1 and named[0][:1].isupper()


def _bare_address(clauses: list[str]) -> bool:
    """Whether what is left is one capitalised word, as a name is after a greeting."""
    words = [w for c in clauses for w in _WORD.findall(c)]
    return len(words) == 1 and words[0][:1].isupper()


def _says_nothing(text: str, names: frozenset[str]) -> bool:
    return all(_is_name(word, names) for word in without_small_talk(text).split())


def _is_reaction(clause: str, names: frozenset[str]) -> bool:
    """Whether a clause only praises something ("It was an awesome time!", "太棒了")."""
    english = any(word in _REACTIONS for word in _WORD.findall(clause.lower()))
    if not (english or any(word in clause for word in _CHINESE_REACTIONS)):
        return False
    content = [w for w in without_small_talk(clause).split() if not _is_name(w, names)]
    return len(content) <= _REACTION_SUBJECT_WORDS


def _is_name(word: str, names: frozenset[str]) -> bool:
    """Whether a word is a speaker's name or, capitalised, its short form (Mel for Melanie)."""
    lowered = word.lower()
    if lowered in names:
        return True
    short = word[:1].isupper() and len(lowered) >= _SHORT_NAME_CHARS
    return short and any(name.startswith(lowered) for name in names)


def _names_in(brief: str, people: Collection[str]) -> frozenset[str]:
    """The speakers' names, lower case, with the short forms the brief calls them by."""
    names = frozenset(part.lower() for person in people for part in person.split() if part)
    if not names:
        return names
    # The keyword line is lower case: "mel" is a name there when the quotes call someone Mel.
    return names | {w.lower() for w in _CAPITALISED.findall(brief) if _is_name(w, names)}
