"""The day compressed into a topic's card (seed 000 §4.8: "对每个话题进行进一步的总结压缩").

A review compresses, per topic, the messages it received since the last review into one
digest per calendar day, kept on the topic's brief card (``SummaryCard["days"]``). The digest is
written by the brief writer (the cheap model when one is configured, else the native extractive
writer) from that day's messages alone, so a reader of the card sees what each day added. The
messages stay in the topic's file (seed 000 §4.5: never compressed away online); a digest only
cites them. One entry per day: a later review that finds more messages of a day it already
digested rewrites that day's entry from all of them, and a review with nothing new writes none.
"""

from __future__ import annotations

from collections.abc import Sequence

from langgraph_topics.roles.protocols import BriefWriter, TopicInfo
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.stores.topic_records import day_of
from langgraph_topics.summaries.card import DayDigest
from langgraph_topics.summaries.native import TokenCounter


def new_days(
    fresh: Sequence[StoredMessage], previous: Sequence[DayDigest], today: str
) -> dict[str, list[str]]:
    """The days ``fresh`` messages add to, each with every message id it now covers.

    A message is dated by its own timestamp (when it was said, which a date query asks
    about); an undated one by the review's ``today``.
    """
    covered = {digest["day"]: list(digest["message_ids"]) for digest in previous}
    touched: dict[str, list[str]] = {}
    for message in fresh:
        day = day_of(message.get("timestamp")) or today
        ids = touched.setdefault(day, covered.get(day, []))
        if message["id"] not in ids:
            ids.append(message["id"])
    return {day: ids for day, ids in touched.items() if ids != covered.get(day)}


def digest_day(
    writer: BriefWriter,
    topic: TopicInfo,
    day: str,
    messages: Sequence[StoredMessage],
    count_tokens: TokenCounter,
) -> DayDigest:
    """One day's messages of a topic, compressed by the brief writer.

    Raises:
        Exception: Whatever the writer raises (the caller keeps the day as it was).
    """
    _, text = writer.write(topic, messages)
    source = sum(count_tokens(message["content"]) for message in messages)
    return {
        "day": day,
        "text": text,
        "message_ids": [message["id"] for message in messages],
        "tokens_saved": max(0, source - count_tokens(text)),
    }


def digested_days(
    writer: BriefWriter,
    topic: TopicInfo,
    messages: Sequence[StoredMessage],
    since: int,
    previous: Sequence[DayDigest],
    today: str,
    count_tokens: TokenCounter,
) -> list[DayDigest]:
    """The topic's day digests once the messages after its first ``since`` are taken in.

    Args:
        writer: The brief writer.
        topic: The topic as the writer is told of it.
        messages: All its messages, in the store's order.
        since: How many of them the last review saw (``ReviewRecord["reviewed"]``).
        previous: The digests its card holds.
        today: The review's day, for undated messages.
        count_tokens: The token counter.

    Returns:
        All digests, oldest day first (``previous`` itself when nothing was new).

    Raises:
        Exception: Whatever the writer raises.
    """
    position = {message["id"]: index for index, message in enumerate(messages)}
    digests = {digest["day"]: digest for digest in previous}
    for day, ids in new_days(messages[since:], previous, today).items():
        held = sorted((i for i in ids if i in position), key=position.__getitem__)
        if held:  # ids a merge or division took elsewhere are no longer this topic's
            day_messages = [messages[position[i]] for i in held]
            digests[day] = digest_day(writer, topic, day, day_messages, count_tokens)
    return [digests[day] for day in sorted(digests)]
