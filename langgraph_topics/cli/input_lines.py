"""Lines typed or piped into ``chat``, decoded strictly: a line that is not UTF-8 is named.

Read as text, standard input would raise a decoding traceback in the middle of a chat (or,
with ``surrogateescape``, hand a lone surrogate to the stores); read as bytes, the bad line is
reported by its number and its first bad byte, and nothing of it is sent.
"""

from __future__ import annotations

from typing import TextIO

from langgraph_topics.errors import InputError
from langgraph_topics.message_texts import text_problem


class InputLines:
    """Read ``stream`` one line at a time, counting lines (1 is the first)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        # A real standard input has its bytes underneath; a test's StringIO has only text.
        self._bytes = getattr(stream, "buffer", None)
        self.number = 0

    def readline(self) -> str:
        """The next line ('' at the end).

        Raises:
            InputError: The line is not valid UTF-8 (CESU-8 surrogates included) or holds a
                lone surrogate; one line naming the line number and the first bad byte.
        """
        self.number += 1
        if self._bytes is None:
            line = self._stream.readline()
            problem = text_problem(line)
            if problem:
                raise self._refused(problem)
            return line
        raw: bytes = self._bytes.readline()
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as error:
            bad = raw[error.start]
            raise self._refused(
                f"not valid UTF-8: byte 0x{bad:02x} at byte {error.start} ({error.reason})"
            ) from None

    def _refused(self, problem: str) -> InputError:
        return InputError(f"standard input line {self.number}: {problem}; the line was not sent")
