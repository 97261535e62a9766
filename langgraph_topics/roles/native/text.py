"""Text helpers shared by the native roles: message text, sentences, clipping, language."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from langgraph_topics.state.records import StoredMessage

_SENTENCE_END = re.compile(r"(?<=[。！？!?；;…])\s*|\n+|(?<=\.)\s+")
_CJK_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_LETTER = re.compile(r"[A-Za-z]")
_SPACES = re.compile(r"\s+")


def message_text(message: StoredMessage) -> str:
    """Return the text a message is judged by: its content plus its tool calls.

    Tool calls are included because an assistant turn that only calls a tool has no content, yet
    its arguments ("search: 茅台 市盈率") say what the turn is about.
    """
    parts = [message["content"]]
    for call in message.get("tool_calls", []):
        name = call.get("name", "")
        arguments = json.dumps(call.get("args", {}), ensure_ascii=False, default=str)
        parts.append(f"{name} {arguments}")
    return "\n".join(part for part in parts if part).strip()


def indexed_text(message: StoredMessage | None) -> str:
    """What a message is matched by: its text (and tool calls), after the speaker's name.

    The name is part of what a message says: "what did Caroline research?" is about her turns.
    One text per message everywhere (index, evidence, splitter), so each is embedded once.
    """
    if message is None:
        return ""
    text = message_text(message)
    name = message.get("name")
    return f"{name}: {text}" if name and text else text


def split_sentences(text: str) -> list[str]:
    """Cut text into sentences at Chinese and English sentence ends and line breaks."""
    sentences = (_SPACES.sub(" ", part).strip() for part in _SENTENCE_END.split(text))
    return [sentence for sentence in sentences if sentence]


def clip(text: str, limit: int) -> str:
    """Shorten text to at most ``limit`` characters, marking a cut with an ellipsis."""
    text = _SPACES.sub(" ", text).strip()
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 1)].rstrip() + "…"


def truncate_utf8(text: str, max_bytes: int) -> str:
    """Return the longest prefix of ``text`` whose UTF-8 encoding fits in ``max_bytes`` bytes.

    The cut never falls inside a multibyte character: the incomplete tail bytes are dropped.
    """
    encoded = text.encode("utf-8")
    if len(encoded) <= max_bytes:
        return text
    return encoded[: max(0, max_bytes)].decode("utf-8", errors="ignore")


def utf8_len(text: str) -> int:
    """Length of ``text`` in UTF-8 bytes."""
    return len(text.encode("utf-8"))


def is_chinese(texts: Iterable[str]) -> bool:
    """Whether texts are mainly Chinese.

    One Chinese character carries roughly as much as three Latin letters, so the counts are
    compared with that ratio; English terms inside Chinese text do not flip the verdict.
    """
    chinese = 0
    latin = 0
    for text in texts:
        chinese += len(_CJK_CHAR.findall(text))
        latin += len(_LATIN_LETTER.findall(text))
    return chinese > 0 and chinese * 3 >= latin
