"""A topic's messages handed out without a copy: the first ``length`` of a list only appended to.

The stores keep each topic's messages in a list they only ever append to (a topic that is
rewritten, by a merge or a division, gets a new list). A topic window reads every active topic
on every turn; copying a topic of 10,000 messages for each of them was work (and garbage) that
grew with history. A view of the list's current length is a snapshot all the same: appends made
later lie past its end.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import overload

from langgraph_topics.state.records import StoredMessage


class MessagesView(Sequence[StoredMessage]):
    """The first ``length`` messages of ``source``, which is appended to but never changed.

    The messages are the store's own records, shared with every reader: never change them.
    """

    __slots__ = ("length", "source")

    def __init__(self, source: list[StoredMessage], length: int | None = None) -> None:
        self.source = source
        self.length = len(source) if length is None else length

    def __len__(self) -> int:
        return self.length

    @overload
    def __getitem__(self, index: int) -> StoredMessage: ...

    @overload
    def __getitem__(self, index: slice) -> list[StoredMessage]: ...

    def __getitem__(self, index: int | slice) -> StoredMessage | list[StoredMessage]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self.length)
            if step == 1:
                return self.source[start:stop]
            # A backward slice's stop of -1 means "before the first" here, not "the last".
            return [self.source[place] for place in range(start, stop, step)]
        place = index + self.length if index < 0 else index
        if not 0 <= place < self.length:
            raise IndexError("message index out of range")
        return self.source[place]

    def __iter__(self) -> Iterator[StoredMessage]:
        return itertools.islice(self.source, self.length)

    def extends(self, earlier: MessagesView) -> bool:
        """Whether this view is ``earlier`` with messages appended (the same list, no shorter)."""
        return self.source is earlier.source and self.length >= earlier.length
