r"""Read an import file: one JSON object a line, each kept with its ``file:line``.

Lines are split on ``\n`` only: ``str.splitlines`` would also split on U+2028 and friends,
which are valid, unescaped, inside a JSON string. Each line is decoded as UTF-8 on its own so
that an error names the line holding the bad bytes. Blank lines are skipped; a byte-order mark
at the start of the file is ignored.
"""

from __future__ import annotations

import json
from pathlib import Path

from langgraph_topics.errors import InputError
from langgraph_topics.importing.records import Origin, SourcedRecord

_JSON_TYPE = {
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "true/false",
}


def read_jsonl(path: Path) -> list[SourcedRecord]:
    """The records of a JSONL file, each with its origin ``<path>:<line>``.

    Only the file's form is checked here (UTF-8, JSON, one object a line); the records
    themselves are checked by :func:`~langgraph_topics.importing.records.check_records`.

    Raises:
        InputError: The file cannot be read, or a line is not UTF-8 or not a JSON object.
    """
    try:
        raw = Path(path).read_bytes()
    except OSError as error:
        raise InputError(f"{path}: cannot read the file ({error.strerror or error})") from None
    raw = raw.removeprefix(b"\xef\xbb\xbf")
    records: list[SourcedRecord] = []
    for number, line in enumerate(raw.split(b"\n"), start=1):
        where = f"{path}:{number}"
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as error:
            raise InputError(
                f"{where}: not UTF-8 (byte 0x{line[error.start]:02x} at column {error.start + 1})"
            ) from None
        if not text.strip():
            continue
        try:
            record = json.loads(text)
        except json.JSONDecodeError as error:
            raise InputError(f"{where}: not JSON ({error.msg} at column {error.colno})") from None
        except RecursionError:
            raise InputError(f"{where}: not JSON (nested too deeply)") from None
        if not isinstance(record, dict):
            found = "null" if record is None else _JSON_TYPE.get(type(record), "something else")
            raise InputError(f"{where}: expected a JSON object, got {found}")
        records.append(SourcedRecord(record, Origin(where, f"line {number}")))
    return records
