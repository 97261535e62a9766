"""Errors a person can act on: each message is one line naming the file:line, id or setting."""

from __future__ import annotations


class InputError(ValueError):
    """Something given to the memory is wrong (a record, a file, a thread id, a setting).

    Raised before anything is written, so fixing the input and running again is always safe.
    """


class ThreadBusyError(RuntimeError):
    """Another process (or thread) held a conversation thread's lock for too long."""
