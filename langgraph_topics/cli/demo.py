"""``langgraph-topics demo``: a scripted conversation showing the lifecycle, offline."""

from __future__ import annotations

import json
import re
import tempfile
import textwrap
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

from langgraph_topics.cli.tables import clip, print_json_line
from langgraph_topics.memory import TopicMemory
from langgraph_topics.state.records import TopicRecord

DEMO_BUDGET = 1000
"""Small enough that the script splits after a few turns."""

_WIDE = re.compile(r"[\u3000-\u9fff\uff00-\uffef]")
"""Characters a terminal draws two columns wide (CJK and full-width punctuation)."""
_REPLY_COLUMNS = 96


def load_script() -> list[dict[str, str]]:
    """The demo's user lines with a note on what each one shows."""
    text = (resources.files("langgraph_topics.demo") / "script.jsonl").read_text("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _woken(
    topics: Mapping[str, TopicRecord], asleep_since: dict[str, int], turn: int
) -> list[tuple[str, int]]:
    """Topics active again this turn after sleeping, with the turn each fell asleep.

    ``asleep_since`` (topic id: turn it fell dormant or was archived) is kept up to date.
    """
    woken: list[tuple[str, int]] = []
    for topic_id, record in topics.items():
        if record["status"] in ("dormant", "archived"):
            asleep_since.setdefault(topic_id, turn)
        elif topic_id in asleep_since and record["status"] == "active":
            woken.append((record["name"], asleep_since.pop(topic_id)))
    return woken


def _wrapped(reply: str) -> str:
    """The whole reply, wrapped under its label: a reply is short, and it is what a user reads."""
    width = _REPLY_COLUMNS // 2 if _WIDE.search(reply) else _REPLY_COLUMNS
    return "\n           ".join(textwrap.wrap(reply, width) or [""])


def run_demo(
    data_dir: Path | None, thread_id: str, budget: int | None, *, as_json: bool = False
) -> int:
    """Run the script and print, per turn, what the memory did.

    ``as_json``: one JSON object a line per turn (``turn``, ``user``, ``reply``, ``share``,
    ``topics``, ``active``, ``tokens``, ``events``, ``woken``), then one for the check and the
    topics, instead of the narrated walkthrough.
    """
    with tempfile.TemporaryDirectory(prefix="langgraph-topics-demo-") as scratch:
        memory = TopicMemory(
            data_dir=data_dir or Path(scratch), budget_tokens=budget or DEMO_BUDGET
        )
        if not as_json:
            print(
                f"budget {memory.settings.budget_tokens} tokens, split at "
                f"{memory.settings.split_trigger:.0%}, last {memory.settings.keep_recent} kept\n"
            )
        asleep_since: dict[str, int] = {}
        for turn, line in enumerate(load_script(), start=1):
            reply = memory.chat(thread_id, line["text"])
            state = memory.state(thread_id)
            woken = _woken(state.get("topics", {}), asleep_since, turn)
            estimate = state["estimate"]
            active = sum(1 for t in state.get("topics", {}).values() if t["status"] == "active")
            events = [e for e in state.get("events", []) if e["kind"] in SHOWN_EVENTS]
            if as_json:
                print_json_line(
                    {
                        "turn": turn,
                        "user": line["text"],
                        "reply": reply,
                        "share": estimate["share"],
                        "topics": len(state.get("topics", {})),
                        "active": active,
                        "tokens": state["context"]["tokens"],
                        "events": [{"kind": e["kind"], "detail": e["detail"]} for e in events],
                        "woken": [{"name": name, "dormant_since": since} for name, since in woken],
                    }
                )
                continue
            note = f"  ({line['note']})" if line.get("note") else ""
            print(f"turn {turn:2d}{note}")
            print(f"  user   : {clip(line['text'], 90)}")
            print(
                f"  window : estimate {estimate['share']:.0%} of budget, "
                f"{len(state.get('topics', {}))} topics, {active} active, "
                f"{state['context']['tokens']} tokens assembled"
            )
            for event in events:
                print(f"  {event['kind']:<7}: {clip(event['detail'], 100)}")
            for name, since in woken:
                print(f"  woken  : {clip(name, 50)}, dormant since turn {since}")
            print(f"  reply  : {_wrapped(reply)}\n")
        report = memory.check(thread_id)
        topics = memory.topics(thread_id)
        if as_json:
            print_json_line(
                {
                    "check": {"ok": report.ok, "findings": list(report.findings)},
                    "topics": [
                        {k: t[k] for k in ("id", "status", "message_count", "name")}  # type: ignore[literal-required]
                        for t in topics
                    ],
                }
            )
            return 0 if report.ok else 1
        print("check  :", "all invariants hold" if report.ok else "; ".join(report.findings))
        for topic in topics:
            print(
                f"  {topic['id']}  {topic['status']:<8} {topic['message_count']:3d} msgs  "
                f"{clip(topic['name'], 50)}"
            )
        return 0 if report.ok else 1


SHOWN_EVENTS = frozenset(
    {
        "split",
        "topic_created",
        "activated",
        "dormant",
        "recall_cue",
        "date_query",
        "index_search",
        "degraded",
    }
)
"""The turn events the demo shows (the rest are in the tuning log)."""
