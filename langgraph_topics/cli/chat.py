"""``langgraph-topics chat``: a REPL on a terminal, one answer per line on a pipe.

With ``--json`` each answer is one JSON object a line (``{"id", "text", "reply"}``, plus
``"recovered": true`` for the saved answer of a line a dead session left), and the banner and
prompt go to standard error, so standard output is JSON lines only.

Each line is recorded as pending (``pending_line``) before the memory sees it, with the message
id it is sent with, and forgotten once its answer is printed, so a line whose process died is
answered or reported on the next start (by that id: a line typed twice is two lines).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage

from langgraph_topics.cli.input_lines import InputLines
from langgraph_topics.cli.pending_line import (
    Abandoned,
    ChatSession,
    PendingLine,
    abandoned_lines,
    judge,
    legacy_line,
    pending_directory,
)
from langgraph_topics.cli.tables import clip, print_json_line
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


@dataclass(frozen=True)
class Replies:
    """Where the answers go: plain text, or one JSON object a line (``--json``)."""

    as_json: bool = False

    def show(self, entry: PendingLine, reply: str, *, recovered: bool = False) -> None:
        """Print the answer to ``entry`` (the line it answers, by its message id, in JSON)."""
        if not self.as_json:
            print(reply, flush=True)
            return
        shown: dict[str, Any] = {"id": entry.message_id, "text": entry.text, "reply": reply}
        if recovered:
            shown["recovered"] = True
        print_json_line(shown)

    def chrome(self, text: str, *, end: str = "\n") -> None:
        """The banner or the prompt: standard error under ``--json``, else standard output."""
        print(text, end=end, file=sys.stderr if self.as_json else sys.stdout, flush=True)


def _reply(result: dict[str, Any]) -> str:
    last = result["messages"][-1]
    return text_of(last) if isinstance(last, AIMessage) else ""


def _answer(
    memory: Any,
    thread_id: str,
    session: ChatSession,
    text: str,
    replies: Replies,
    *,
    asked: bool = False,
    taken_over: Abandoned | None = None,
) -> None:
    """Answer ``text``, keeping it pending until the answer is printed.

    Args:
        memory: The ``TopicMemory``.
        thread_id: The thread.
        session: This process's session (where the line is kept pending).
        text: The line.
        replies: Where the answer is printed.
        asked: The thread already ends with this line (a turn that stopped half-way), so the
            turn is finished (or, when nothing is left to finish, run again on the state as it
            is) instead of adding the line a second time.
        taken_over: A dead session's line being answered: it keeps its message id, and its
            file goes once this session holds the line.
    """
    entry = session.write(text, taken_over.entry.message_id if taken_over else None)
    if taken_over is not None:
        taken_over.forget()
    try:
        if asked:
            reply = _reply(memory.resume(thread_id) or memory.run_turn(thread_id, {"mode": "chat"}))
        else:
            reply = _send(memory, thread_id, entry)
    except (InputError, ThreadBusyError):
        if taken_over is None:  # a typed line refused before anything was written
            session.clear()
        raise  # a recovered line stays pending: the next start tries it again
    replies.show(entry, reply)
    session.clear()


def _send(memory: Any, thread_id: str, entry: PendingLine) -> str:
    """Run one chat turn on the line, sent with the id it is pending under.

    ``TopicMemory.chat`` gives its message a fresh id, which recovery could not look for.
    """
    message = HumanMessage(entry.text, id=entry.message_id)
    return _reply(memory.run_turn(thread_id, {"messages": [message], "mode": "chat"}))


def _settle_pending(memory: Any, thread_id: str, session: ChatSession, replies: Replies) -> None:
    """Answer or report every line a dead ``chat`` session of the thread left."""
    directory = session.directory
    if not directory.is_dir():
        return
    legacy = legacy_line(directory)
    if legacy is not None:
        _notice(
            f"an earlier version of chat left {clip(legacy, 60)!r} pending; it is not sent "
            "again (that version kept no message id): send it again if `transcript` shows "
            "no answer"
        )
    with abandoned_lines(directory) as lines:
        if lines:
            # A turn whose input was saved but not run: finished first, so its line is in
            # the state below (and not sent a second time).
            memory.resume(thread_id)
        settled: set[str] = set()
        for line in lines:
            if line.entry.message_id in settled:
                # A recovery killed while taking a line over leaves it in its own file and
                # in the dead session's: one line, answered or shown once.
                line.forget()
                continue
            settled.add(line.entry.message_id)
            _settle_one(memory, thread_id, session, line, replies)


def _settle_one(
    memory: Any, thread_id: str, session: ChatSession, line: Abandoned, replies: Replies
) -> None:
    def held(message_id: str) -> bool:
        return bool(memory.held_ids(thread_id, [message_id]))

    found = judge(memory.state(thread_id).get("messages", []), held, line.entry)
    shown = clip(line.entry.text, 60)
    if found.outcome == "answered":
        _notice(f"recovered: the answer to {shown!r} (the last chat stopped before showing it)")
        replies.show(line.entry, found.answer or "", recovered=True)
        line.forget()
    elif found.outcome == "followed":
        _notice(
            f"recovered: {shown!r} was answered before the last chat stopped, and later turns "
            "followed (`transcript` shows its answer)"
        )
        line.forget()
    else:
        _notice(
            f"interrupted: {shown!r} was not answered when the last chat stopped; answering now"
        )
        _answer(
            memory,
            thread_id,
            session,
            line.entry.text,
            replies,
            asked=found.outcome == "asked",
            taken_over=line,
        )


def run_chat(memory: Any, thread_id: str, data_dir: Path, *, as_json: bool = False) -> int:
    """Chat on standard input until it ends (or ``/quit`` on a terminal); returns 0.

    ``as_json``: each answer as one JSON object a line (see the module docstring).

    Raises:
        LostCheckpointsError: The thread's topic files hold messages its checkpoints do not
            (the checkpoint database was deleted or emptied): nothing is written.
        InputError: A piped line is not valid UTF-8: the lines before it were answered, it
            and the lines after it are not sent.
    """
    memory.require_checkpoints(thread_id)
    interactive = sys.stdin.isatty()
    replies = Replies(as_json)
    if interactive:
        replies.chrome(welcome(thread_id, data_dir, memory.settings))
    lines = InputLines(sys.stdin)
    with ChatSession(pending_directory(data_dir, thread_id)) as session:
        _settle_pending(memory, thread_id, session, replies)
        while True:
            if interactive:
                replies.chrome("> ", end="")
            try:
                line = lines.readline()
            except InputError as error:
                if not interactive:  # a script's input: stop at the bad line (exit status 2)
                    raise
                _notice(str(error))  # a bad paste on a terminal: say so, type on
                continue
            if not line:
                break
            text = line.strip()
            if not text:
                continue
            if interactive and text in QUIT_WORDS:
                break
            _answer(memory, thread_id, session, text, replies)
    return 0
