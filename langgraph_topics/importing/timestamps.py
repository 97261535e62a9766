"""Send times of imported messages: the usual written forms, normalised to ISO-8601.

The stores, the time index and the retrieval index all read ``timestamp`` with
``datetime.fromisoformat``; a time they cannot read silently loses its place in the timeline,
so every accepted form is rewritten as ISO-8601 before it is stored.
"""

from __future__ import annotations

from datetime import datetime

ACCEPTED_FORMS = 'ISO-8601, "YYYY-MM-DD HH:MM[:SS]" or "1:56 pm on 8 May, 2023"'
"""How an error message describes what would have been accepted."""

# Forms ``fromisoformat`` does not read. The last two are LoCoMo's session times (full and
# abbreviated month names).
_OTHER_FORMATS = (
    "%Y/%m/%d %H:%M:%S",
    "%Y/%m/%d %H:%M",
    "%Y/%m/%d",
    "%I:%M %p on %d %B, %Y",
    "%I:%M %p on %d %b, %Y",
)


def parse_timestamp(text: str) -> datetime | None:
    """Read a time in one of the accepted forms; None when it is in none of them.

    A time without a zone stays naive (the stores read naive times as UTC).
    """
    cleaned = " ".join(text.split())  # LoCoMo dates come with stray double spaces
    if not cleaned:
        return None
    try:
        return datetime.fromisoformat(cleaned)
    except ValueError:
        pass
    for form in _OTHER_FORMATS:
        try:
            return datetime.strptime(cleaned, form)
        except ValueError:
            continue
    return None


def normalize_timestamp(text: str) -> str:
    """Return ``text`` as an ISO-8601 time.

    Raises:
        ValueError: ``text`` is in none of the accepted forms.
    """
    parsed = parse_timestamp(text)
    if parsed is None:
        raise ValueError(f"timestamp {text!r:.80} is not a time ({ACCEPTED_FORMS})")
    return parsed.isoformat()
