"""A file-system fault of a store met mid-turn, raised as the one-line ``StoreError``.

The checkpoint database and the topic index type their faults where they fail
(``store_faults``); the files the stores append to fail with a bare ``OSError`` deep inside a
graph step. The API promises a ``StoreError`` for a store that cannot be written (a full disk
above all), so a turn turns those into one, naming the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from langgraph_topics.stores.store_faults import file_fault


@contextmanager
def typed_file_faults() -> Iterator[None]:
    """Raise a full, read-only or forbidden store file's ``OSError`` as a ``StoreError``.

    Any other ``OSError`` (a bug, a vanished file) is left as it is.
    """
    try:
        yield
    except OSError as error:
        fault = file_fault(error)
        if fault is None:
            raise
        raise fault from error
