"""The numbered invariants (docs/forks-and-check.md), checked on a thread."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from langgraph_topics.errors import InputError
from langgraph_topics.history.refined_turns import RefinedTurnLog
from langgraph_topics.history.view_cache import VIEW_CACHE_FILE, view_cache_damage
from langgraph_topics.state.records import AssembledContext, TopicResult
from langgraph_topics.stores.checkpointed_mark import MARK_FILE
from langgraph_topics.stores.protocols import ReviewableTopicStore, TopicStore
from langgraph_topics.stores.time_index_file import DamagedTimeIndex, TimeIndex, read_time_index
from langgraph_topics.stores.topic_audit import TopicFilesAudit
from langgraph_topics.stores.topic_store import TOPICS_DIR


@dataclass
class CheckReport:
    """Outcome of ``TopicMemory.check``: one line per finding, and whether all held."""

    ok: bool = True
    findings: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def fail(self, finding: str) -> None:
        """Record a broken invariant."""
        self.ok = False
        self.findings.append(finding)

    def note(self, finding: str) -> None:
        """Record something worth knowing that breaks nothing."""
        self.findings.append(finding)


class LostCheckpointsError(InputError):
    """A thread had checkpoints (or its topic files hold messages) but now has none.

    The database was deleted or emptied (or another one put in its place). Running on would
    start the thread over from nothing and leave every stored message unseen, so the thread
    is refused, before anything is written, until the database is restored.
    """


class UnknownCheckpointError(InputError):
    """A checkpoint id (``check --checkpoint``, a fork's ``checkpoint_id``) the thread never had.

    LangGraph would read it as an empty state: ``check`` would report every message lost, and a
    turn would start a branch from nothing.
    """


def unknown_checkpoint(thread_id: str, checkpoint_id: str, location: str) -> UnknownCheckpointError:
    """The one-line error for a checkpoint id the thread does not have."""
    return UnknownCheckpointError(
        f"no such checkpoint {checkpoint_id!r} of thread {thread_id!r} in {location} (it never "
        "existed, or it was pruned: a thread keeps its newest checkpoints)"
    )


def lost_checkpoints(
    thread_id: str, database: Path, thread_directory: Path, messages: int
) -> LostCheckpointsError:
    """The one-line error for a thread whose checkpoints are gone.

    ``messages``: how many its topic files hold; none when it was never split (its
    ``.checkpointed`` mark tells that it had checkpoints).
    """
    topics = thread_directory / TOPICS_DIR
    if messages:
        held = f"but its topic files ({topics}) hold {messages} messages"
        lost = "deleted or emptied"
    else:
        held = f"although it had checkpoints there ({thread_directory / MARK_FILE})"
        lost = "deleted or emptied, and every message of the thread with it (none was split yet)"
    return LostCheckpointsError(
        f"{database}: no checkpoint of thread {thread_id!r}, {held}: the checkpoint database "
        f"was {lost}; nothing was changed: restore {database.name} from a backup, or run "
        f"`langgraph-topics repair --data-dir {database.parent}` to rebuild the thread from "
        "what its topic files and pending chat lines hold (the thread is refused until then, "
        "so that it does not start over without its history)"
    )


def check_partition(
    report: CheckReport, working_ids: Sequence[str], located: dict[str, str], total: int
) -> None:
    """Invariant 1: unsplit ∪ topics = every message ever added, pairwise disjoint."""
    duplicates = [i for i, n in Counter(working_ids).items() if n > 1]
    if duplicates:
        report.fail(f"invariant 1: ids twice in the working set: {duplicates[:5]}")
    both = [i for i in working_ids if i in located]
    if both:
        report.fail(f"invariant 1: {len(both)} ids both unsplit and in a topic: {both[:5]}")
    held = len(set(working_ids)) + len(located) - len(set(both))
    if held < total:
        report.fail(f"invariant 1: {total} messages were added but only {held} are held")
    elif held > total:
        report.fail(f"invariant 1: {held} messages are held but only {total} were added")
    report.counts.update(unsplit=len(working_ids), split=len(located), total=total)


def check_topic_files(
    report: CheckReport, audit: TopicFilesAudit, working_ids: Sequence[str], shown: int = 5
) -> None:
    """Invariant 1 in the files themselves: each id once, no damage; name file, line and id.

    Records no checkpoint of the branch recorded are not failures: a split a crash cut short
    (its messages are still unsplit and will be split again) or another branch's.
    """
    for message_id, places in list(audit.duplicates().items())[:shown]:
        where = " and ".join(str(p) for p in places)
        report.fail(f"invariant 1: message {message_id!r} is stored {len(places)} times: {where}")
    extra = len(audit.duplicates()) - shown
    if extra > 0:
        report.fail(f"invariant 1: {extra} more ids are stored more than once")
    for place, damaged_id in audit.damaged[:shown]:
        named = f" (message {damaged_id!r})" if damaged_id else ""
        held = damaged_id is not None and damaged_id in audit.branch
        if held:
            report.note(f"{place}: unreadable line{named}; a readable copy is held")
        else:
            report.fail(f"{place}: unreadable line{named}; its record is skipped")
    if len(audit.damaged) > shown:
        report.fail(f"{len(audit.damaged) - shown} more unreadable lines")
    for place in audit.torn:
        report.note(f"{place}: torn last line (a write cut short by a crash; cut on next open)")
    waiting = set(working_ids)
    in_flight = [i for i in audit.elsewhere if i in waiting and i not in audit.branch]
    if in_flight:
        report.note(
            f"in flight: {len(in_flight)} unsplit messages also sit in records this branch "
            "never recorded (a split a crash cut short, or another branch's); unseen here, "
            f"they are split again on this branch: {in_flight[:shown]}"
        )
    others = len(set(audit.elsewhere) - set(in_flight))
    if others:
        report.note(f"{others} stored messages belong to other branches (forks) and are unseen")
    report.counts.update(in_flight=len(in_flight), other_branches=others)


def check_refined_turns(
    report: CheckReport,
    log: RefinedTurnLog,
    located: Mapping[str, str],
    working_ids: Sequence[str],
    elsewhere: Collection[str],
    shown: int = 5,
) -> None:
    """Every refined turn points at messages the thread holds, each message in one record.

    A record whose messages only other branches' records hold (a fork, or a split a crash cut
    short before its checkpoint: its messages are split again) is a note; one pointing at
    messages held nowhere, or a message in two records, fails. Unreadable and torn lines are
    notes: their exchanges are recorded again when next asked for (``history.view``).
    """
    held = set(located) | set(working_ids)
    seen: dict[str, str] = {}
    nowhere: list[str] = []
    other: list[str] = []
    twice: list[str] = []
    records = log.records()
    for record in records:
        for message_id in record["ids"]:
            if message_id in seen and seen[message_id] != record["key"]:
                twice.append(message_id)
            seen.setdefault(message_id, record["key"])
            if message_id not in held:
                (other if message_id in elsewhere else nowhere).append(message_id)
    where = log.path or "refined turns"
    if nowhere:
        report.fail(
            f"{where}: {len(nowhere)} refined turns' ids are held nowhere: {nowhere[:shown]}"
        )
    if twice:
        report.fail(f"{where}: {len(twice)} messages are in two refined turns: {twice[:shown]}")
    if other:
        report.note(
            f"{where}: {len(other)} refined turns' ids are other branches' (or a split a crash "
            f"cut short, split again): {other[:shown]}"
        )
    if log.unreadable:
        report.note(f"{where}: {len(log.unreadable)} unreadable lines skipped (recorded again)")
    if log.torn:
        report.note(f"{where}: torn last line (a write cut short by a crash; cut on next append)")
    report.counts.update(refined_turns=len(records))
    if log.root is not None:
        check_view_cache(report, log.root / VIEW_CACHE_FILE)


def check_view_cache(report: CheckReport, path: Path) -> None:
    """A damaged view cache is a note: derived data, made again from the refined turns."""
    damage = view_cache_damage(path)
    if damage is not None:
        report.note(f"{path}: {damage} (derived data, rebuilt from the refined turns when asked)")


def check_context(
    report: CheckReport,
    context: AssembledContext,
    expected_recent: Sequence[str],
    results: dict[str, TopicResult],
    families: Mapping[str, str] | None = None,
) -> None:
    """Invariants 2 and 3 on one assembled window, plus 'no message twice' and the budget.

    ``families`` maps subtopics to their roots: a family is one block of the window, ranked
    by its best subtopic (``subtopics/families.py``).
    """
    in_window = context["message_ids"]
    missing = [i for i in expected_recent if i not in in_window]
    # The fixed part may reach back past the last N to the call of a tool result it opens
    # with (invariant 8), so the recent ids end with the expected ones.
    recent = list(context["recent_ids"])
    if missing or recent[len(recent) - len(expected_recent) :] != list(expected_recent):
        report.fail(f"invariant 2: recent messages missing from the window: {missing[:5]}")
    blocks: dict[str, list[float]] = {}
    for topic_id in context["topic_ids"]:
        if topic_id in results:
            block = (families or {}).get(topic_id, topic_id)
            blocks.setdefault(block, []).append(results[topic_id]["relevance_score"])
    scores = [members[0] for members in blocks.values()]
    if scores != sorted(scores, reverse=True) or any(
        members != sorted(members, reverse=True) for members in blocks.values()
    ):
        report.fail(f"invariant 3: topic results not sorted by score: {list(blocks.values())}")
    twice = [i for i, n in Counter(in_window).items() if n > 1]
    if twice:
        report.fail(f"no message twice: {twice[:5]} appear more than once")
    if context["tokens"] > context["budget"]:
        report.fail(f"budget: window of {context['tokens']} tokens over {context['budget']}")


def check_links(report: CheckReport, store: TopicStore, shown: int = 5) -> None:
    """Every link of the branch's topics names a topic the branch has (live, or merged).

    A link to a topic the branch does not have (a record edited by hand, a topic left out on
    open) breaks no invariant: ``topics`` lists it as recorded and nothing follows it, so it is
    a note.
    """
    topic_ids = store.topic_ids()
    live = set(topic_ids)
    links: set[tuple[str, frozenset[str]]] = set()
    unknown: list[str] = []
    for topic_id in topic_ids:
        for other, kind in store.links(topic_id):
            links.add((kind, frozenset((topic_id, other))))
            if other not in live and not _has_topic(store, other):
                unknown.append(f"{topic_id} -> {other} ({kind})")
    if unknown:
        report.note(
            f"{len(unknown)} links name a topic this branch does not have (left as they are): "
            f"{unknown[:shown]}"
        )
    report.counts["links"] = len(links)


def _has_topic(store: TopicStore, topic_id: str) -> bool:
    """Whether the store knows a topic that ``topic_ids`` leaves out (one merged into another)."""
    try:
        if isinstance(store, ReviewableTopicStore):
            store.merged_into(topic_id)
        else:
            store.meta(topic_id)
    except KeyError:
        return False
    return True


def check_time_index(report: CheckReport, path: Path, index: TimeIndex) -> None:
    """The time index kept beside the topic files matches the branch's (``time_index_file``).

    It is derived data, rewritten at the next change of topics (and rebuilt on open when
    missing or unreadable): a mismatch is a note, never a failure.
    """
    try:
        found = read_time_index(path)
    except (DamagedTimeIndex, OSError) as error:
        report.note(f"{error}: derived data, rebuilt from the topic files when next opened")
        return
    if found is None:
        if index:
            report.note(f"{path}: missing (derived data, rebuilt when the thread is next opened)")
    elif found != {day: list(ids) for day, ids in index.items()}:
        report.note(
            f"{path}: differs from this branch's topics (another branch's, or a write a crash "
            "cut short; derived data, rewritten at the next split or review)"
        )
