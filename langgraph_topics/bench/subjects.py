"""MemoryBank users as long conversations, and the subjects each one keeps coming back to.

MemoryBank (Zhong et al., AAAI 2024; MIT) labels no subjects. What it does give per user is
``meta_information.hobbies``, a comma-separated list (``"painting, playing the piano, reading"``,
``"绘画，弹钢琴，读书"``). A **recurring subject** is one of these hobbies that exchanges mention
on at least two different days; its messages are both turns (query and response) of every
exchange mentioning it. A mention is found mechanically:

- English: the hobby's words, without ``the``/``to``/``a``/``of``/``and`` and without a leading
  ``-ing`` verb when more words follow (``playing the piano`` → ``piano``, ``watching art films``
  → ``art films``), matched as a run of words after light suffix stripping (``painting`` ~
  ``painted`` ~ ``paints``, ``movies`` ~ ``movie``, ``running`` ~ ``run``);
- Chinese: the hobby as a substring, without a leading one-character verb (看 听 弹 打 玩 吃 品)
  when three or more characters remain (``看电影`` → ``电影``, ``弹钢琴`` → ``钢琴``).

A hobby never mentioned on two days is simply not a recurring subject.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Any

from langgraph_topics.datasets.memorybank import ASSISTANT

_STOP = frozenset({"the", "to", "a", "an", "of", "and"})
_PARTICLES = frozenset({"out", "up"})
"""``working out`` stays a phrase: dropping its verb would leave a particle."""
_CHINESE_VERBS = "看听弹打玩吃品"
_CJK = re.compile(r"[\u4e00-\u9fff]")
_WORD = re.compile(r"[a-z]+")
_HOBBY_SEPARATORS = re.compile(r"[,，、;；]|\band\b")
_VOWELS = set("aeiou")
_SIDES = (("user", "query"), ("assistant", "response"))
"""Role and MemoryBank field of the two turns of an exchange."""


@dataclass(frozen=True)
class Subject:
    """A hobby as a match key."""

    name: str
    """The hobby as the data writes it."""
    key: tuple[str, ...]
    """Stemmed words (English) or one substring (Chinese)."""
    chinese: bool


@dataclass
class MemoryBankUser:
    """One user's days concatenated into a conversation."""

    conversation_id: str
    name: str
    language: str
    messages: list[dict[str, Any]]
    """Records ``{id, role, content, name, timestamp}``, ids ``D{day}:{turn}`` as in LoCoMo."""
    subjects: list[Subject] = field(default_factory=list)
    """Every hobby of the user, recurring or not."""


def stem(word: str) -> str:
    """A light English stem: one inflectional suffix off, then a Porter-like final ``e``.

    ``movies``/``movie`` → ``movi``, ``hiking``/``hike`` → ``hike``, ``running`` → ``run``,
    ``dancing``/``dance`` → ``danc``, ``wine`` stays ``wine``.
    """
    stripped = False
    for suffix in ("ies", "ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)] + ("i" if suffix == "ies" else "")
            stripped = suffix in ("ing", "ed")
            break
    if word.endswith("y"):
        word = word[:-1] + "i"
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in _VOWELS | {"l", "s"}:
        return word[:-1]  # swimming → swim
    if word.endswith("e") and not (len(word) <= 5 and _cvc(word[:-1])):
        return word[:-1]
    if stripped and len(word) <= 4 and _cvc(word):
        return word + "e"  # hiking → hike, as the bare verb keeps it
    return word


def _cvc(word: str) -> bool:
    """Consonant, vowel, consonant (not w, x, y) at the end: Porter's short-syllable test."""
    if len(word) < 3:
        return False
    first, middle, last = word[-3], word[-2], word[-1]
    return first not in _VOWELS and middle in _VOWELS and last not in _VOWELS | {"w", "x", "y"}


def parse_hobbies(text: str) -> list[Subject]:
    """The hobbies of a ``meta_information.hobbies`` string as match keys (empty ones dropped)."""
    subjects: list[Subject] = []
    for raw in _HOBBY_SEPARATORS.split(text):
        name = raw.strip()
        if not name:
            continue
        if _CJK.search(name):
            key = name[1:] if len(name) >= 3 and name[0] in _CHINESE_VERBS else name
            subjects.append(Subject(name, (key,), chinese=True))
            continue
        words = [w for w in _WORD.findall(name.lower()) if w not in _STOP]
        if len(words) > 1 and words[0].endswith("ing") and words[1] not in _PARTICLES:
            words = words[1:]
        if words:
            subjects.append(Subject(name, tuple(stem(w) for w in words), chinese=False))
    return subjects


def mentions(subject: Subject, text: str) -> bool:
    """Whether ``text`` mentions the subject (see the module docstring for the rule)."""
    if subject.chinese:
        return subject.key[0] in text
    stems = [stem(w) for w in _WORD.findall(text.lower())]
    size = len(subject.key)
    return any(tuple(stems[i : i + size]) == subject.key for i in range(len(stems) - size + 1))


def subject_messages(user: MemoryBankUser, subject: Subject) -> tuple[list[str], int]:
    """The ids of the exchanges mentioning the subject (both turns), and on how many days."""
    ids: list[str] = []
    days: set[str] = set()
    messages = user.messages
    for query, response in zip(messages[::2], messages[1::2], strict=True):
        if mentions(subject, query["content"]) or mentions(subject, response["content"]):
            ids.extend([query["id"], response["id"]])
            days.add(query["id"].split(":", 1)[0])
    return ids, len(days)


def memorybank_files(path: Path) -> list[Path]:
    """The history files under a MemoryBank directory (``*/memory_bank_*.json``) or the file."""
    if path.is_file():
        return [path]
    found = sorted(path.glob("memory_bank_*.json")) + sorted(path.glob("*/memory_bank_*.json"))
    if not found:
        raise SystemExit(f"no memory_bank_*.json under {path}")
    return found


def load_memorybank_users(path: Path) -> list[MemoryBankUser]:
    """Every user of every history file, days in date order, exchange k = turns 2k-1 and 2k.

    Raises:
        SystemExit: A file that is not MemoryBank's history object (one line naming it).
    """
    users: list[MemoryBankUser] = []
    for history_file in memorybank_files(path):
        try:
            raw = json.loads(history_file.read_text("utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise SystemExit(f"{history_file}: not readable JSON ({error})") from None
        if not isinstance(raw, dict):
            raise SystemExit(f"{history_file}: expected an object keyed by user name")
        language = history_file.stem.rsplit("_", 1)[-1]
        for index, (key, entry) in enumerate(raw.items(), start=1):
            users.append(_user(history_file, f"mb-{language}-{index:02d}", key, entry, language))
    return users


def _user(
    source: Path, conversation_id: str, key: str, entry: Any, language: str
) -> MemoryBankUser:
    history = entry.get("history") if isinstance(entry, dict) else None
    if not isinstance(history, dict):
        raise SystemExit(f"{source}: user {key!r} has no history object")
    name = key.strip()
    messages: list[dict[str, Any]] = []
    for number, day in enumerate(sorted(history), start=1):
        try:
            start = datetime.combine(date.fromisoformat(day), time(9))
        except ValueError:
            raise SystemExit(f"{source}: user {key!r}: bad date {day!r}") from None
        turn = 0
        for exchange in history[day]:
            if not isinstance(exchange, dict):
                raise SystemExit(f"{source}: user {key!r}, {day}: expected query/response pairs")
            for role, field_name in _SIDES:
                turn += 1
                messages.append(
                    {
                        "id": f"D{number}:{turn}",
                        "role": role,
                        "content": str(exchange.get(field_name, "")),
                        "name": name if role == "user" else ASSISTANT,
                        # Turns of a day one second apart from 9:00, as the LoCoMo reader does.
                        "timestamp": (start + timedelta(seconds=turn - 1)).isoformat(),
                    }
                )
    meta = entry.get("meta_information") or {}
    hobbies = meta.get("hobbies", "") if isinstance(meta, dict) else ""
    return MemoryBankUser(
        conversation_id, name, language, messages, parse_hobbies(str(hobbies or ""))
    )
