"""The review graph's state: the topic graph's, plus what one review run is asked to do.

The review runs on the thread's own checkpoint (docs/review.md), so its
state is :class:`~langgraph_topics.state.schema.TopicState` itself: every key of a turn is read
from the checkpoint and written back untouched, and what the review changes (the registry,
``store_ranges``, ``review``) is what the next turn, Studio and ``check`` read. The keys
added here live for one run only (the first step resets the lists); the next turn's checkpoint
drops them.
"""

from __future__ import annotations

import operator
from typing import Annotated, Literal, NotRequired

# typing_extensions' TypedDict: on Python < 3.12 pydantic (and so Studio's schema view) rejects
# typing.TypedDict.
from typing_extensions import TypedDict

from langgraph_topics.state.records import ArchiveRecord, KeptRecord, MergeRecord
from langgraph_topics.state.schema import TopicState


class ReviewRequest(TypedDict):
    """Archive or restore one topic by request, instead of a review by the criteria."""

    action: Literal["archive", "restore"]
    topic_id: str


class ReviewInput(TypedDict):
    """What a caller sends the review graph (both keys optional: ``{}`` reviews now)."""

    review_now: NotRequired[str | None]
    """The time to judge by (ISO-8601, e.g. ``2030-01-01``); when absent, the thread's own
    clock (``review.clock``: its latest message's time, or now while it is live)."""
    review_request: NotRequired[ReviewRequest | None]
    """One topic to archive or restore by request; absent for a review by the criteria."""


class ReviewState(TopicState, total=False):
    """The topic state with the review run's input."""

    review_now: str | None
    """See :class:`ReviewInput`; cleared when the run ends."""
    review_request: ReviewRequest | None
    """See :class:`ReviewInput`; cleared when the run ends."""
    review_rebriefed: Annotated[list[str], operator.add]
    """Topics whose brief this run rewrote."""
    review_merged: Annotated[list[MergeRecord], operator.add]
    """Merges of this run, in order."""
    review_archived: Annotated[list[ArchiveRecord], operator.add]
    """Topics this run archived."""
    review_kept: Annotated[list[KeptRecord], operator.add]
    """Archive candidates this run kept (related to the current discussion)."""
    review_digested: Annotated[list[str], operator.add]
    """Topics whose day digests this run wrote."""
