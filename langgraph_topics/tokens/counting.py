"""Count tokens the way the main model will, for Chinese as well as English text.

``characters / 4`` undercounts Chinese about 2.5 times, so a 70 % trigger computed with it would
fire far too late; a real BPE tokenizer (``quicktok``, ids identical to tiktoken, bundled
encodings, no download) is the default.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import lru_cache

from langgraph_topics.state.records import StoredMessage

TokenCounter = Callable[[str], int]
"""Maps a text to its token count."""

MESSAGE_OVERHEAD_TOKENS = 4
"""Per-message framing (role markers, separators) that chat templates add."""

COUNT_CACHE_SIZE = 8_192
"""Texts whose counts are remembered (a few turns of working set and prompt pieces). About
450 bytes an entry with its text; a turn brings ~5.6 new texts, so 65,536 entries kept filling
for 12,000 turns (+22 MB from turn 1,000 to 10,000 of the soak, issue 41 item 7), while a
turn re-counts a few hundred."""
CACHED_TEXT_CHARS = 4_096
"""Longer texts are counted without being remembered. A turn's whole system prompt (tens of
KB, new every turn) kept as a key held its text for 65,536 turns: resident memory grew by
about 6 MB every 100 turns of a long thread (issue 41 item 7)."""

log = logging.getLogger(__name__)


def _is_cjk(char: str) -> bool:
    code = ord(char)
    return (
        0x3040 <= code <= 0x30FF  # kana
        or 0x3400 <= code <= 0x4DBF
        or 0x4E00 <= code <= 0x9FFF
        or 0xAC00 <= code <= 0xD7AF  # hangul
        or 0xF900 <= code <= 0xFAFF
        or 0xFF00 <= code <= 0xFFEF  # full-width forms
    )


def estimate_tokens_by_script(text: str) -> int:
    """Estimate without a tokenizer: about 0.75 token per CJK character, 1 per 4 others."""
    cjk = sum(1 for char in text if _is_cjk(char))
    other = len(text) - cjk
    return int(round(cjk * 0.75 + other / 4))


_NAMED: dict[object, str] = {estimate_tokens_by_script: "script-estimate"}
"""The bundled counters, by a name that is the same in every process."""


def counter_key(counter: TokenCounter) -> str | None:
    """A bundled counter's lasting name (counts saved under it stay valid); None for others."""
    return _NAMED.get(counter)


@lru_cache(maxsize=4)
def _encoding_counter(encoding_name: str) -> TokenCounter | None:
    try:
        import quicktok

        encoding = quicktok.get_encoding(encoding_name)
    except Exception as error:  # missing wheel or unknown encoding: fall back, but say so
        log.warning(
            "tokenizer %s unavailable (%s); using the script-aware estimate", encoding_name, error
        )
        return None

    # Every turn counts the working set again; its texts repeat, so their counts are kept.
    @lru_cache(maxsize=COUNT_CACHE_SIZE)
    def count_remembered(text: str) -> int:
        return int(encoding.count(text))

    def count(text: str) -> int:
        if len(text) > CACHED_TEXT_CHARS:  # a whole prompt: counted once, never kept
            return int(encoding.count(text))
        return count_remembered(text)

    _NAMED[count] = f"quicktok:{encoding_name}"
    return count


def default_token_counter(encoding_name: str = "o200k_base") -> TokenCounter:
    """The bundled BPE counter for ``encoding_name``, or the script-aware estimate."""
    return _encoding_counter(encoding_name) or estimate_tokens_by_script


def message_tokens(message: StoredMessage, counter: TokenCounter) -> int:
    """Tokens one message takes in a chat prompt: its text, tool calls and framing."""
    tokens = counter(message["content"]) + MESSAGE_OVERHEAD_TOKENS
    for call in message.get("tool_calls", []):
        tokens += counter(str(call.get("name", ""))) + counter(str(call.get("args", "")))
    return tokens
