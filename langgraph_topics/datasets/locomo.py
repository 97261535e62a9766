"""Read LoCoMo conversations (Maharana et al., ACL 2024; CC BY-NC 4.0) as importable messages.

Speaker A is the user, speaker B the assistant, a turn's ``dia_id`` its message id, and the
session's date its timestamp (turns of one session one second apart, to keep their order).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

_DIA_ID = re.compile(r"^D(\d+):(\d+)$")
_SESSION_KEY = re.compile(r"^session_(\d+)$")


@dataclass(frozen=True)
class LocomoQuestion:
    """One question with its evidence turns (normalised ids)."""

    question: str
    answer: str
    category: int
    evidence: tuple[str, ...]


@dataclass
class LocomoConversation:
    """One LoCoMo sample: its turns as message records, and its questions."""

    sample_id: str
    speaker_a: str
    speaker_b: str
    messages: list[dict[str, Any]]
    questions: list[LocomoQuestion]
    skipped_evidence: list[str] = field(default_factory=list)
    """Evidence ids that could not be normalised to a known turn."""


def parse_session_date(text: str) -> datetime:
    """Parse LoCoMo's ``"1:56 pm on 8 May, 2023"``."""
    return datetime.strptime(" ".join(text.split()), "%I:%M %p on %d %B, %Y")


def normalise_evidence(raw: str, known: set[str]) -> list[str]:
    """Known turn ids in an evidence string (``"D8:6; D9:17"``, ``"D30:05"`` → ``D30:5``)."""
    found: list[str] = []
    for piece in re.split(r"[;,\s]+", raw.strip()):
        match = _DIA_ID.match(piece)
        if match:
            candidate = f"D{int(match.group(1))}:{int(match.group(2))}"
            if candidate in known:
                found.append(candidate)
    return found


def conversation_messages(sample: dict[str, Any]) -> tuple[list[dict[str, Any]], str, str]:
    """The turns of a sample as records ``{id, role, content, name, timestamp}``, in order."""
    conversation = sample["conversation"]
    speaker_a, speaker_b = conversation["speaker_a"], conversation["speaker_b"]
    sessions = sorted(
        int(m.group(1))
        for key in conversation
        if (m := _SESSION_KEY.match(key)) and isinstance(conversation[key], list)
    )
    messages: list[dict[str, Any]] = []
    for number in sessions:
        start = parse_session_date(conversation[f"session_{number}_date_time"])
        for offset, turn in enumerate(conversation[f"session_{number}"]):
            text = turn["text"]
            if turn.get("blip_caption"):
                text = f"{text} [shares a photo: {turn['blip_caption']}]"
            messages.append(
                {
                    "id": turn["dia_id"],
                    "role": "user" if turn["speaker"] == speaker_a else "assistant",
                    "content": text,
                    "name": turn["speaker"],
                    "timestamp": (start + timedelta(seconds=offset)).isoformat(),
                }
            )
    return messages, speaker_a, speaker_b


def load_locomo(path: str | Path) -> list[LocomoConversation]:
    """Load a LoCoMo JSON file (a list of samples, or one sample)."""
    raw = json.loads(Path(path).read_text("utf-8"))
    samples = raw if isinstance(raw, list) else [raw]
    conversations: list[LocomoConversation] = []
    for sample in samples:
        messages, speaker_a, speaker_b = conversation_messages(sample)
        known = {m["id"] for m in messages}
        questions: list[LocomoQuestion] = []
        skipped: list[str] = []
        for qa in sample.get("qa", []):
            evidence: list[str] = []
            for raw_id in qa.get("evidence", []):
                ids = normalise_evidence(str(raw_id), known)
                evidence.extend(ids)
                if not ids:
                    skipped.append(str(raw_id))
            answer = qa.get("answer", qa.get("adversarial_answer", ""))
            questions.append(
                LocomoQuestion(
                    question=qa["question"],
                    answer=str(answer),
                    category=int(qa["category"]),
                    evidence=tuple(dict.fromkeys(evidence)),
                )
            )
        conversations.append(
            LocomoConversation(
                sample["sample_id"], speaker_a, speaker_b, messages, questions, skipped
            )
        )
    return conversations
