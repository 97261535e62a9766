"""``langgraph-topics import``: a recorded conversation (JSONL) into a thread.

The whole file is checked before the memory is even opened; progress is a ``tqdm`` bar on a
terminal (``cli.progress``), nothing in a log.
"""

from __future__ import annotations

import argparse

from langgraph_topics.cli.opening import open_memory
from langgraph_topics.cli.progress import progress_bar
from langgraph_topics.cli.tables import print_json
from langgraph_topics.cli.user_scope import scoped_memory


def run_import(args: argparse.Namespace) -> int:
    """Import ``args.file`` into ``args.thread``; prints what was added (``--json``: an object).

    Raises:
        InputError: A bad file (``FILE:LINE``), setting or data directory; nothing written.
    """
    from langgraph_topics.importing import check_records, read_jsonl

    records = read_jsonl(args.file)
    check_records(records)  # the whole file, before the memory is even opened
    memory = open_memory(args)
    memory.require_checkpoints(args.thread)  # never start a thread over without its history
    with progress_bar(len(records), "importing", "msg") as progress:
        added = scoped_memory(memory, args).import_messages(args.thread, records, progress=progress)
    topics = memory.topics(args.thread)
    already = len(records) - added
    if args.json:
        print_json(
            {
                "thread": args.thread,
                "file": str(args.file),
                "records": len(records),
                "added": added,
                "already_there": already,
                "topics": len(topics),
            }
        )
        return 0
    note = f" ({already} already there)" if already else ""
    print(f"imported {added} messages into {len(topics)} topics{note}")
    return 0
