"""Convert MemoryBank's Chinese histories (Zhong et al., AAAI 2024; MIT) to LoCoMo samples.

MemoryBank gives, per user, a map of dates to exchanges ``{"query", "response"}`` and a list of
probing questions about earlier days, without answers or evidence. The answers and evidence
turns come from a hand-labelled JSONL file, one object per question::

    {"user": "张曼婷", "question": "…", "answer": "…", "evidence": ["D4:7"], "note": "…"}

Each user becomes one LoCoMo sample: the days, in date order, are sessions ``D1``, ``D2``…;
within a day the query of exchange *k* is turn ``2k-1`` and the response turn ``2k``. Run
``python -m langgraph_topics.datasets.memorybank HISTORY PROBING LABELS OUT`` to write the file.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterator, Sequence
from datetime import date
from pathlib import Path
from typing import Any

ASSISTANT = "AI伴侣"
"""The assistant's speaker name (``speaker_b``)."""

CATEGORY = 4
"""LoCoMo category given to every question (single-hop)."""

_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_DIA_ID = re.compile(r"^D[1-9]\d*:[1-9]\d*$")


def session_date_time(day: date) -> str:
    """Format a day in LoCoMo's session style, at 9:00 am (``"9:00 am on 27 April, 2023"``).

    Args:
        day: The day of the session (MemoryBank gives dates only).

    Returns:
        The ``session_N_date_time`` text.
    """
    return f"9:00 am on {day.day} {_MONTHS[day.month - 1]}, {day.year}"


def _read_history(path: Path) -> dict[str, dict[str, list[dict[str, str]]]]:
    """Read the histories, keyed by user name then by ISO date, checking their shape."""
    raw = json.loads(Path(path).read_text("utf-8"))
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: expected an object keyed by user name")
    histories: dict[str, dict[str, list[dict[str, str]]]] = {}
    for name, user in raw.items():
        history = user.get("history") if isinstance(user, dict) else None
        if not isinstance(history, dict):
            raise ValueError(f"{path}: user {name!r} has no history object")
        for day, exchanges in history.items():
            try:
                date.fromisoformat(day)
            except ValueError as error:
                raise ValueError(f"{path}: user {name!r}: bad date {day!r}") from error
            if not isinstance(exchanges, list) or not all(
                isinstance(e, dict)
                and isinstance(e.get("query"), str)
                and isinstance(e.get("response"), str)
                for e in exchanges
            ):
                raise ValueError(f"{path}: user {name!r}, {day}: expected query/response pairs")
        histories[name] = history
    return histories


def _json_objects(path: Path, expected: str) -> Iterator[tuple[str, dict[str, Any]]]:
    r"""Yield ``("file:line", object)`` for each non-empty line (split on ``\n`` only).

    Raises:
        ValueError: A line that is not JSON or not an object, naming the file and line.
    """
    for number, line in enumerate(Path(path).read_text("utf-8").split("\n"), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"{where}: not JSON ({error.msg})") from error
        if not isinstance(record, dict):
            raise ValueError(f"{where}: expected {expected}")
        yield where, record


def _read_probing(path: Path) -> dict[str, list[str]]:
    """Read the probing questions, one ``{name: [questions]}`` object a line."""
    questions: dict[str, list[str]] = {}
    for where, record in _json_objects(path, "an object {name: [questions]}"):
        for name, asked in record.items():
            if not isinstance(asked, list) or not all(isinstance(q, str) for q in asked):
                raise ValueError(f"{where}: questions of {name!r} are not a string list")
            questions.setdefault(name, []).extend(asked)
    return questions


def _turns(user: str, history: dict[str, list[dict[str, str]]]) -> list[list[dict[str, str]]]:
    """Build the sessions of one user: days in date order, query then response per exchange."""
    sessions: list[list[dict[str, str]]] = []
    for number, day in enumerate(sorted(history), start=1):
        turns: list[dict[str, str]] = []
        for exchange in history[day]:
            for speaker, key in ((user, "query"), (ASSISTANT, "response")):
                turns.append(
                    {
                        "speaker": speaker,
                        "dia_id": f"D{number}:{len(turns) + 1}",
                        "text": exchange[key],
                    }
                )
        sessions.append(turns)
    return sessions


def _read_labels(
    path: Path,
    known_ids: dict[str, set[str]],
    probing: dict[str, list[str]],
) -> dict[tuple[str, str], dict[str, Any]]:
    """Read and check the labels, keyed by (user, question).

    Raises:
        ValueError: A line that is not a label object, names an unknown user, a question not
            among the user's probing questions, a question labelled twice, or an unknown
            evidence id; the message names the file and line.
    """
    labels: dict[tuple[str, str], dict[str, Any]] = {}
    for where, record in _json_objects(path, "a label object"):
        user, question = record.get("user"), record.get("question")
        answer, evidence = record.get("answer"), record.get("evidence")
        if not (isinstance(user, str) and isinstance(question, str) and isinstance(answer, str)):
            raise ValueError(f"{where}: user, question and answer must be strings")
        if not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence):
            raise ValueError(f"{where}: evidence must be a list of strings")
        if user not in known_ids:
            raise ValueError(f"{where}: unknown user {user!r}")
        if question not in probing.get(user, []):
            raise ValueError(f"{where}: not a probing question of {user!r}: {question!r}")
        if (user, question) in labels:
            raise ValueError(f"{where}: question labelled twice: {question!r}")
        unknown = [e for e in evidence if not _DIA_ID.match(e) or e not in known_ids[user]]
        if unknown:
            raise ValueError(f"{where}: unknown evidence id(s) for {user!r}: {', '.join(unknown)}")
        labels[(user, question)] = {
            "question": question,
            "answer": answer,
            "evidence": list(evidence),
            "category": CATEGORY,
        }
    return labels


def memorybank_to_locomo(
    history_json: Path, probing_jsonl: Path, labels_jsonl: Path
) -> list[dict[str, Any]]:
    """Build one LoCoMo sample per MemoryBank user, with the labelled questions as its QA.

    Samples are named ``mb-cn-01``, ``mb-cn-02``… in the history file's user order. Questions
    keep the probing file's order; probing questions without a label are left out.

    Args:
        history_json: MemoryBank history file (object keyed by user name, each with a
            ``history`` map of ISO date to ``{"query", "response"}`` exchanges).
        probing_jsonl: Probing questions, one ``{name: [questions]}`` object a line.
        labels_jsonl: Labels, one ``{"user", "question", "answer", "evidence"}`` object a line
            (an optional ``note`` is ignored).

    Returns:
        LoCoMo samples (``sample_id``, ``conversation``, ``qa``), ready for ``json.dump``.

    Raises:
        ValueError: Malformed input, or a label naming an unknown user, question or evidence
            id (the message names the labels file line).
    """
    histories = _read_history(history_json)
    probing = _read_probing(probing_jsonl)
    strangers = sorted(set(probing) - set(histories))
    if strangers:
        raise ValueError(f"{probing_jsonl}: users without a history: {', '.join(strangers)}")
    sessions = {user: _turns(user, history) for user, history in histories.items()}
    known_ids = {
        user: {turn["dia_id"] for session in days for turn in session}
        for user, days in sessions.items()
    }
    labels = _read_labels(labels_jsonl, known_ids, probing)

    samples: list[dict[str, Any]] = []
    for index, (user, history) in enumerate(histories.items(), start=1):
        conversation: dict[str, Any] = {"speaker_a": user, "speaker_b": ASSISTANT}
        days = zip(sorted(history), sessions[user], strict=True)
        for number, (day, turns) in enumerate(days, start=1):
            conversation[f"session_{number}_date_time"] = session_date_time(date.fromisoformat(day))
            conversation[f"session_{number}"] = turns
        qa = [labels[(user, q)] for q in probing.get(user, []) if (user, q) in labels]
        samples.append({"sample_id": f"mb-cn-{index:02d}", "conversation": conversation, "qa": qa})
    return samples


def main(argv: Sequence[str] | None = None) -> None:
    """Convert MemoryBank files to a LoCoMo JSON list (``ensure_ascii=False, indent=1``).

    Args:
        argv: Command-line arguments (``HISTORY PROBING LABELS OUT``); ``sys.argv`` if None.
    """
    parser = argparse.ArgumentParser(
        prog="python -m langgraph_topics.datasets.memorybank",
        description="Convert MemoryBank (Chinese) histories and labels to LoCoMo-format JSON.",
    )
    parser.add_argument("history", type=Path, help="memory_bank_cn.json")
    parser.add_argument("probing", type=Path, help="probing_questions_cn.jsonl")
    parser.add_argument("labels", type=Path, help="labels.jsonl (answers and evidence)")
    parser.add_argument("out", type=Path, help="LoCoMo-format JSON file to write")
    args = parser.parse_args(argv)
    samples = memorybank_to_locomo(args.history, args.probing, args.labels)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(samples, ensure_ascii=False, indent=1) + "\n", "utf-8")
    turns = sum(
        len(value)
        for sample in samples
        for key, value in sample["conversation"].items()
        if key.startswith("session_") and isinstance(value, list)
    )
    questions = sum(len(sample["qa"]) for sample in samples)
    print(f"{args.out}: {len(samples)} conversations, {turns} turns, {questions} questions")


if __name__ == "__main__":
    main()
