"""``langgraph-topics chat``: a REPL on a terminal, one answer per line on a pipe.

Each line is recorded as pending (``pending_line``) before the memory sees it and forgotten once
its answer is printed, so a line whose process died is answered or reported on the next start.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from langgraph_topics.cli.pending_line import (
    clear_pending,
    pending_path,
    settle,
    write_pending,
)
from langgraph_topics.cli.tables import clip
from langgraph_topics.errors import InputError, ThreadBusyError
from langgraph_topics.state.messages import text_of

QUIT_WORDS = ("/quit", "/exit")


def back_ends(settings: Any) -> str:
    """Which model serves which role, in a few words (``offline`` without any model)."""
    from langgraph_topics.roles.llm.models import role_model_specs

    specs = role_model_specs(settings)
    if all(spec is None for spec in specs.values()):
        return "offline (native back ends, no model)"
    groups: dict[str, list[str]] = {}
    for role, spec in specs.items():
        name = "native" if spec is None else spec if isinstance(spec, str) else type(spec).__name__
        groups.setdefault(name, []).append(role)
    return "; ".join(f"{name} ({', '.join(roles)})" for name, roles in groups.items())


def welcome(thread_id: str, data_dir: Path, settings: Any) -> str:
    """The line an interactive chat starts with."""
    return (
        f"langgraph-topics chat: thread {thread_id!r} in {data_dir}; "
        f"models: {back_ends(settings)}. "
        f"Type a message; {QUIT_WORDS[0]} or Ctrl-D quits."
    )


def _notice(text: str) -> None:
    print(f"langgraph-topics: {text}", file=sys.stderr, flush=True)


def _answer(memory: Any, thread_id: str, path: Path, text: str, *, asked: bool = False) -> None:
    """Answer ``text``, keeping it pending until the answer is printed.

    ``asked``: the checkpoint already ends with this line (a turn that stopped half-way), so the
    turn is finished (or, when nothing is left to finish, run again on the state as it is)
    instead of adding the line a second time.
    """
    entry = write_pending(path, text)
    try:
        if asked:
            result = memory.resume(thread_id) or memory.run_turn(thread_id, {"mode": "chat"})
            last = result["messages"][-1]
            reply = text_of(last) if isinstance(last, AIMessage) else ""
        else:
            reply = memory.chat(thread_id, text)
    except (InputError, ThreadBusyError):
        clear_pending(path, entry)  # refused before anything was written
        raise
    print(reply, flush=True)
    clear_pending(path, entry)


def _settle_pending(memory: Any, thread_id: str, path: Path) -> None:
    def messages() -> Sequence[BaseMessage]:
        return list(memory.state(thread_id).get("messages", []))

    found = settle(path, messages)
    if found is None:
        return
    shown = clip(found.entry.text, 60)
    if found.answer is not None:
        _notice(f"recovered: the answer to {shown!r} (the last chat stopped before showing it)")
        print(found.answer, flush=True)
        return
    _notice(f"interrupted: {shown!r} was not answered when the last chat stopped; answering now")
    _answer(memory, thread_id, path, found.entry.text, asked=found.asked)


def run_chat(memory: Any, thread_id: str, data_dir: Path) -> int:
    """Chat on standard input until it ends (or ``/quit`` on a terminal); returns 0."""
    interactive = sys.stdin.isatty()
    if interactive:
        print(welcome(thread_id, data_dir, memory.settings), flush=True)
    path = pending_path(data_dir, thread_id)
    _settle_pending(memory, thread_id, path)
    while True:
        if interactive:
            print("> ", end="", flush=True)
        line = sys.stdin.readline()
        if not line:
            break
        text = line.strip()
        if not text:
            continue
        if interactive and text in QUIT_WORDS:
            break
        _answer(memory, thread_id, path, text)
    return 0
