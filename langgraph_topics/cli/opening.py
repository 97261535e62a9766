"""Opening the memory for a command, and refusing a thread or directory that is not there.

``chat`` and ``import`` create their thread (and the data directory). Every other thread
command reads or amends a thread, so a mistyped ``--data-dir`` or ``--thread`` is one line and
exit status 2, with nothing created: the settings, ``cli.json`` and the thread are checked
before the memory is opened (opening it creates the data directory's databases, and reading
under the thread's lock its folder).
"""

from __future__ import annotations

import argparse
import shlex
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from langgraph_topics.cli.existing_data import require_data_dir
from langgraph_topics.cli.known_threads import thread_on_disk
from langgraph_topics.cli.remembered import remembered_budget
from langgraph_topics.errors import InputError

DEFAULT_DATA_DIR = Path(".langgraph_topics")

if TYPE_CHECKING:
    from langgraph_topics.memory import TopicMemory
    from langgraph_topics.settings import Settings


def check_data_dir(path: Path) -> None:
    """Refuse a ``--data-dir`` that is not a directory, before anything is written."""
    if path.exists() and not path.is_dir():
        raise InputError(f"{path}: --data-dir is not a directory")
    for parent in path.parents:
        if parent.exists() and not parent.is_dir():
            raise InputError(f"{path}: --data-dir is inside {parent}, which is not a directory")


def settings_of_environment() -> Settings:
    """The settings of the environment (``LANGGRAPH_TOPICS_*``), each fault one line."""
    from langgraph_topics.settings import Settings

    try:
        return Settings()
    except InputError:  # already names its setting (a prompt directory…)
        raise
    except ValueError as error:
        raise InputError(f"settings: {error}") from None


def open_memory(args: argparse.Namespace, settings: Settings | None = None) -> TopicMemory:
    """Open the memory of ``--data-dir`` (created when missing), remembering ``--budget``."""
    from langgraph_topics.memory import TopicMemory

    check_data_dir(args.data_dir)
    settings = settings or settings_of_environment()
    budget = remembered_budget(args.data_dir, args.budget)
    settings = replace(settings, data_dir=Path(args.data_dir))
    try:
        if budget is not None:
            settings = replace(settings, budget_tokens=budget)
        return TopicMemory(settings=settings)
    except InputError:  # already names its setting (a model string…)
        raise
    except ValueError as error:  # a setting from the environment (LANGGRAPH_TOPICS_*)
        raise InputError(f"settings: {error}") from None


def open_existing(args: argparse.Namespace) -> TopicMemory:
    """Open the memory for a command on an existing thread; refuse a missing one first.

    Raises:
        InputError: A bad setting, ``cli.json`` or model string (these first, as any command
            reports them), no such data directory, or no such thread: one line, nothing
            created.
    """
    check_data_dir(args.data_dir)
    settings = settings_of_environment()
    remembered_budget(args.data_dir, args.budget, store=False)
    known = None if settings.store == "postgres" else thread_on_disk(args.data_dir, args.thread)
    if known is False:
        check_models(settings)  # a bad model setting is the problem to report first
        require_data_dir(args.data_dir)
        raise unknown_thread(args.thread, str(args.data_dir), args.data_dir)
    memory = open_memory(args, settings)
    if known is None and not memory.exists(args.thread):
        location = memory.location
        memory.close()
        in_database = settings.store == "postgres"
        raise unknown_thread(args.thread, location, None if in_database else args.data_dir)
    return memory


def unknown_thread(thread_id: str, location: str, data_dir: Path | None) -> InputError:
    """The line naming a thread that ``location`` does not hold, and how to list its threads.

    Args:
        thread_id: The thread asked for.
        location: The data directory or the database (redacted), as the memory names it.
        data_dir: The ``--data-dir`` to repeat in the hint (None: the threads are in a
            database).
    """
    from langgraph_topics.thread_ids import scoped_parts

    parts = scoped_parts(thread_id)
    if parts is not None:  # a user's thread (--user): named as the user named it
        return InputError(
            f"no thread {parts[1]!r} of that user (user key {parts[0]}) in {location}"
        )
    listing = "langgraph-topics threads"
    if data_dir is not None and Path(data_dir) != DEFAULT_DATA_DIR:
        listing += f" --data-dir {shlex.quote(str(data_dir))}"
    return InputError(f"no thread {thread_id!r} in {location} ({listing} lists them)")


def check_models(settings: Settings) -> None:
    """Refuse a model string that names no usable model (as opening the memory would).

    Raises:
        InputError: Naming the setting or variable and the model string.
    """
    from langgraph_topics.roles.llm.models import resolve_model, role_model_choices

    for spec, source in role_model_choices(settings).values():
        if isinstance(spec, str):
            resolve_model(spec, settings, source=source)
