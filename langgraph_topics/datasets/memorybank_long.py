"""Long Chinese histories from MemoryBank's short ones: where not everything fits (issue 39).

``memorybank-cn-dev.json`` holds 15 users of ten days each, 1,649 to 3,898 tokens a user: at
4,000 tokens everything fits and every method scores 1.000. Here the users' days are laid end
to end as the days of **one** person (one voice, "我"), so that a question about an early day
has the whole later history in front of it, as in a long companion conversation:

- each sample is all the users' days, in a given order of users; the days are renumbered from
  ``D1`` and dated one after the other from :data:`FIRST_DAY`;
- a question keeps its evidence (renumbered), and a date it names (``5月2日``, ``4月27号``)
  is rewritten to the day that date became, so that date questions still point at their day;
- two orders by default: the source order and its reverse, so that every user's questions are
  asked once about early days and once about late ones.

Run ``python -m langgraph_topics.datasets.memorybank_long DEV_JSON OUT`` to write the file.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from langgraph_topics.datasets.memorybank import ASSISTANT, session_date_time

FIRST_DAY = date(2023, 1, 2)
SPEAKER = "我"
"""The one voice of the long history (the questions speak in the first person)."""
_SESSION = re.compile(r"^session_(\d+)$")
_NAMED_DAY = re.compile(r"(\d{1,2})\s*月\s*(\d{1,2})\s*([日号])")


def long_histories(
    samples: Sequence[dict[str, Any]], orders: Sequence[Sequence[int]] | None = None
) -> list[dict[str, Any]]:
    """One long LoCoMo sample per order of ``samples`` (default: as given, and reversed).

    Raises:
        ValueError: A sample whose sessions lack a date, or an order naming no sample.
    """
    chosen = orders if orders is not None else [range(len(samples)), range(len(samples))[::-1]]
    longs: list[dict[str, Any]] = []
    for number, order in enumerate(chosen, start=1):
        picked = [samples[i] for i in order]
        if not picked:
            raise ValueError("an order of no sample")
        longs.append(_joined(picked, f"mb-cn-long-{number}"))
    return longs


def _joined(samples: Sequence[dict[str, Any]], sample_id: str) -> dict[str, Any]:
    conversation: dict[str, Any] = {"speaker_a": SPEAKER, "speaker_b": ASSISTANT}
    qa: list[dict[str, Any]] = []
    day = 0
    for sample in samples:
        renamed: dict[str, str] = {}
        moved: dict[date, date] = {}
        source = sample["conversation"]
        numbers = sorted(int(m.group(1)) for k in source if (m := _SESSION.match(k)))
        for number in numbers:
            day += 1
            when = FIRST_DAY + timedelta(days=day - 1)
            moved[_session_day(source[f"session_{number}_date_time"], sample)] = when
            conversation[f"session_{day}_date_time"] = session_date_time(when)
            turns = []
            for turn in source[f"session_{number}"]:
                new_id = f"D{day}:{turn['dia_id'].split(':', 1)[1]}"
                renamed[turn["dia_id"]] = new_id
                speaker = SPEAKER if turn["speaker"] != ASSISTANT else ASSISTANT
                turns.append({**turn, "speaker": speaker, "dia_id": new_id})
            conversation[f"session_{day}"] = turns
        for question in sample["qa"]:
            qa.append(
                {
                    **question,
                    "question": _redated(question["question"], moved),
                    "evidence": [renamed.get(i, i) for i in question["evidence"]],
                }
            )
    return {"sample_id": sample_id, "conversation": conversation, "qa": qa}


def _session_day(text: str, sample: dict[str, Any]) -> date:
    try:
        return datetime.strptime(text, "%I:%M %p on %d %B, %Y").date()
    except ValueError:
        raise ValueError(f"{sample.get('sample_id')}: session date {text!r} not read") from None


def _redated(question: str, moved: dict[date, date]) -> str:
    """The question with each month-day it names moved to where that day went."""
    by_month_day = {(d.month, d.day): new for d, new in moved.items()}

    def move(match: re.Match[str]) -> str:
        new = by_month_day.get((int(match.group(1)), int(match.group(2))))
        return match.group(0) if new is None else f"{new.month}月{new.day}{match.group(3)}"

    return _NAMED_DAY.sub(move, question)


def main(argv: Sequence[str] | None = None) -> None:
    """Write the long histories of a MemoryBank LoCoMo file (``DEV_JSON OUT``)."""
    parser = argparse.ArgumentParser(
        prog="python -m langgraph_topics.datasets.memorybank_long",
        description="Lay MemoryBank's users' days end to end as one long Chinese history.",
    )
    parser.add_argument("dev", type=Path, help="memorybank-cn-dev.json (LoCoMo format)")
    parser.add_argument("out", type=Path, help="LoCoMo-format JSON file to write")
    args = parser.parse_args(argv)
    samples = json.loads(args.dev.read_text("utf-8"))
    longs = long_histories(samples)
    args.out.write_text(json.dumps(longs, ensure_ascii=False, indent=1) + "\n", "utf-8")
    for sample in longs:
        sessions = [v for k, v in sample["conversation"].items() if _SESSION.match(k)]
        print(
            f"{sample['sample_id']}: {len(sessions)} days, "
            f"{sum(len(s) for s in sessions)} messages, {len(sample['qa'])} questions"
        )


if __name__ == "__main__":
    main()
