"""References to stored tool results: ``namespace://tool/<hash>`` (seed 001 T2).

A reference names the content, not the call: the same result stored twice is one entry, and
a reference stays valid for as long as any store holds that text.
"""

from __future__ import annotations

import hashlib
import re

REFERENCE_PREFIX = "namespace://tool/"
DIGEST_CHARS = 16
"""Hex characters of the SHA-256 kept in a reference (64 bits: no collision in one thread)."""

_REFERENCE = re.compile(r"namespace://tool/([0-9a-f]{16})\b")


def content_digest(content: str) -> str:
    """The full SHA-256 hex digest of a text (UTF-8)."""
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def reference_for(content: str) -> str:
    """The reference of a tool result's full text."""
    return REFERENCE_PREFIX + content_digest(content)[:DIGEST_CHARS]


def digest_of(reference: str) -> str | None:
    """The short digest a reference names, or None when ``reference`` holds no reference.

    The reference may be embedded in other text (a model's argument such as
    ``"please read <namespace://tool/…>"``): the first one found counts.
    """
    found = _REFERENCE.search(reference)
    return found.group(1) if found else None


def find_references(text: str) -> list[str]:
    """Every reference in ``text``, in order, each once."""
    return list(dict.fromkeys(REFERENCE_PREFIX + d for d in _REFERENCE.findall(text)))
