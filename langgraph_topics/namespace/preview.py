"""Key information of a large tool result: what a model needs to know it without reading it.

Seed 001 T2 (case 1): a bare reference leaves the model blind, so the reference travels with a
preview of bounded size: the top-level keys of JSON, else the first lines, the headings, the
error lines and ``key: value`` lines with their line numbers. Chinese and English text alike
(nothing here depends on word boundaries).
"""

from __future__ import annotations

import json
import re
from typing import Any

PREVIEW_CHARS = 600
"""Default bound of a preview (about 150-300 tokens)."""
LINE_CHARS = 120
FIRST_LINES = 3
LISTED = 6
"""At most this many headings, error lines and key lines each."""

LABELS = {
    "en": {"first": "Starts", "headings": "Headings", "errors": "Errors", "keys": "Keys"},
    "zh": {"first": "开头", "headings": "标题", "errors": "错误", "keys": "关键行"},
}

_ERROR = re.compile(
    r"\b(error|exception|traceback|failed|failure|fatal|panic|denied|warning)\b"
    r"|错误|异常|失败|报错|警告|致命",
    re.IGNORECASE,
)
_HEADING = re.compile(r"^\s*(#{1,6}\s+\S|=== |第[一二三四五六七八九十百0-9]+[章节部分])")
_KEY_LINE = re.compile(
    r"^\s*[\"']?[A-Za-z_\u4e00-\u9fff][\w\u4e00-\u9fff.\-\[\]\"']{0,39}\s*[:=：]\s*\S"
)
"""``key: value`` / ``key = value`` lines whose key starts with a letter (not a timestamp)."""


def _clip(text: str, limit: int = LINE_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        keys = list(value)
        more = ", …" if len(keys) > 5 else ""
        return "{" + ", ".join(str(k) for k in keys[:5]) + more + "}"
    if isinstance(value, list):
        return f"[{len(value)} items]"
    return _clip(json.dumps(value, ensure_ascii=False), 60)


def _json_preview(data: Any) -> list[str] | None:
    if isinstance(data, dict):
        lines = [f"JSON object, {len(data)} keys"]
        lines.extend(f"{key}: {_describe(value)}" for key, value in list(data.items())[:12])
        return lines
    if isinstance(data, list):
        lines = [f"JSON array, {len(data)} items"]
        first = data[0] if data else None
        if isinstance(first, dict):
            lines.append("item keys: " + ", ".join(str(k) for k in list(first)[:12]))
        elif first is not None:
            lines.append("first item: " + _describe(first))
        return lines
    return None


def _text_preview(content: str, labels: dict[str, str]) -> list[str]:
    lines = content.splitlines()
    first = [_clip(line) for line in lines if line.strip()][:FIRST_LINES]
    headings: list[str] = []
    errors: list[str] = []
    keys: list[str] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if len(headings) < LISTED and _HEADING.match(line):
            headings.append(f"L{number} {_clip(line, 80)}")
        elif len(errors) < LISTED and _ERROR.search(line):
            errors.append(f"L{number} {_clip(line, 100)}")
        elif len(keys) < LISTED and number > FIRST_LINES and _KEY_LINE.match(line):
            keys.append(f"L{number} {_clip(line, 60)}")
    out = [f"{labels['first']}: " + " / ".join(first)] if first else []
    for kind, found in (("errors", errors), ("headings", headings), ("keys", keys)):
        if found:
            out.append(f"{labels[kind]}: " + "; ".join(found))
    return out


def key_information(content: str, language: str = "en", limit: int = PREVIEW_CHARS) -> str:
    """A preview of ``content`` of at most ``limit`` characters.

    Args:
        content: The tool result's full text.
        language: ``zh`` or ``en`` (labels only).
        limit: Most characters of the preview.
    """
    labels = LABELS.get(language, LABELS["en"])
    stripped = content.strip()
    lines: list[str] | None = None
    if stripped[:1] in "{[":
        try:
            lines = _json_preview(json.loads(stripped))
        except ValueError:
            lines = None
    if lines is None:
        lines = _text_preview(content, labels)
    kept: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) + 1 > limit:
            room = limit - used - 1
            if room > 20:
                kept.append(line[: room - 1] + "…")
            break
        kept.append(line)
        used += len(line) + 1
    return "\n".join(kept)
