"""Bad input that used to escape as a traceback (issue 41): now one line, status 2, nothing written.

Invalid UTF-8 or CESU-8 surrogates on ``chat``'s standard input, invalid UTF-8 in ``context``'s
text, a missing ``LANGGRAPH_TOPICS_PROMPT_DIR``, a prompt override using a variable its prompt
is not given, an integer ``id`` (read as text, it collided with the string id). In the API each
is an ``InputError``.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from langgraph_topics import Settings, TopicMemory
from langgraph_topics.bench.fakes import HashEmbedder
from langgraph_topics.cli.input_lines import InputLines
from langgraph_topics.cli.main import main
from langgraph_topics.errors import InputError
from langgraph_topics.importing import check_records
from langgraph_topics.message_texts import check_message_text, text_problem
from langgraph_topics.prompts.overrides import check_prompt_dir
from langgraph_topics.settings import PROMPT_DIR_ENV


def _error_lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.strip()]


def _one_line(capsys: pytest.CaptureFixture[str], status: int) -> str:
    lines = _error_lines(capsys)
    assert status == 2, lines
    assert len(lines) == 1 and "Traceback" not in lines[0], lines
    return lines[0]


# ------------------------------------------------------------------------ chat's standard input


@pytest.mark.parametrize(
    ("raw", "byte"),
    [(b"caf\xe9 au lait\n", "0xe9"), (b"cesu \xed\xa0\x80\xed\xb0\x80 pair\n", "0xed")],
)
def test_a_chat_line_that_is_not_utf8_is_one_line_and_not_sent(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    raw: bytes,
    byte: str,
) -> None:
    data_dir = tmp_path / "d"
    piped = io.TextIOWrapper(io.BytesIO(b"hello there\n" + raw + b"never sent\n"), "utf-8")
    monkeypatch.setattr(sys, "stdin", piped)
    status = main(["chat", "--data-dir", str(data_dir), "--thread", "t"])
    line = _one_line(capsys, status)
    assert f"standard input line 2: not valid UTF-8: byte {byte}" in line, line
    assert "the line was not sent" in line
    with TopicMemory(data_dir=data_dir) as memory:
        texts = [m["content"] for m in memory.transcript("t")]
    assert texts[0] == "hello there" and len(texts) == 2  # the first line and its answer only


def test_input_lines_count_lines_and_accept_utf8_from_bytes_or_text() -> None:
    lines = InputLines(io.TextIOWrapper(io.BytesIO("股票\nok\n".encode()), "utf-8"))
    assert [lines.readline(), lines.readline(), lines.readline()] == ["股票\n", "ok\n", ""]
    text_only = InputLines(io.StringIO("fine\nbad \udcff\n"))
    assert text_only.readline() == "fine\n"
    with pytest.raises(InputError, match="standard input line 2: not valid UTF-8: byte 0xff"):
        text_only.readline()


# ------------------------------------------------------------------------ message texts


def test_context_text_that_is_not_utf8_is_a_usage_line_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = tmp_path / "d"
    bad = b"ab\xffcd".decode("utf-8", "surrogateescape")  # how Python hands over argv
    with pytest.raises(SystemExit) as stopped:
        main(["context", bad, "--data-dir", str(data_dir)])
    assert stopped.value.code == 2
    line = _one_line(capsys, 2)
    assert "not valid UTF-8: byte 0xff at character 2" in line
    assert not data_dir.exists()


def test_the_api_refuses_a_lone_surrogate_before_writing(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "d", budget_tokens=900)
    with TopicMemory(settings=settings, embedder=HashEmbedder()) as memory:
        memory.chat("t", "Let's plan the Kyoto trip")
        before = memory.state("t")["total_messages"]
        with pytest.raises(InputError, match="lone surrogate U\\+D800 at character 3"):
            memory.chat("t", "abc\ud800")
        with pytest.raises(InputError, match="text: not valid UTF-8: byte 0xfe"):
            memory.context("t", "x\udcfe")
        assert memory.state("t")["total_messages"] == before
        assert memory.check("t").ok


@given(st.text())
def test_a_text_is_refused_exactly_when_utf8_cannot_store_it(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        assert text_problem(text) is not None
        with pytest.raises(InputError):
            check_message_text(text)
    else:
        assert text_problem(text) is None and check_message_text(text) == text


# ------------------------------------------------------------------------ prompt overrides


def _override(directory: Path, text: str, name: str = "main_window") -> Path:
    (directory / "en").mkdir(parents=True, exist_ok=True)
    path = directory / "en" / f"{name}.md"
    path.write_text(text, "utf-8")
    return path


def test_a_missing_prompt_dir_is_one_line_naming_the_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "no-prompts"
    with pytest.raises(InputError, match=f"prompt_dir={missing}: no such directory"):
        Settings(data_dir=tmp_path / "api", prompt_dir=missing)
    monkeypatch.setenv(PROMPT_DIR_ENV, str(missing))
    with pytest.raises(InputError, match=f"{PROMPT_DIR_ENV}={missing}: no such directory"):
        Settings(data_dir=tmp_path / "api")
    data_dir = tmp_path / "d"
    line = _one_line(capsys, main(["context", "hello", "--data-dir", str(data_dir)]))
    assert f"{PROMPT_DIR_ENV}={missing}: no such directory" in line
    assert not data_dir.exists()


@pytest.mark.parametrize(
    ("text", "found"),
    [
        (
            "---\nvariables: topic_context\n---\nHello {user_name}.\n{topic_context}\n",
            "main_window.md:4: unknown variable {user_name}; main_window is given: topic_context",
        ),
        (
            "---\nvariables: topic_context, mood\n---\n{topic_context}\n",
            "main_window.md:2: unknown variable 'mood' in the header",
        ),
        (
            "---\nvariables: \n---\nRecalled:\n{topic_context}\n",
            "main_window.md:5: variable {topic_context} is used but not declared",
        ),
        ("---\nvariables: topic_context\n---\n{topic_context} }\n", "Single '}'"),
    ],
)
def test_an_override_that_would_fail_to_render_is_one_line_naming_file_and_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    text: str,
    found: str,
) -> None:
    prompts = tmp_path / "prompts"
    _override(prompts, text)
    with pytest.raises(InputError, match="main_window.md") as refused:
        Settings(data_dir=tmp_path / "api", prompt_dir=prompts)
    assert found in str(refused.value)
    monkeypatch.setenv(PROMPT_DIR_ENV, str(prompts))
    data_dir = tmp_path / "d"
    line = _one_line(capsys, main(["context", "hello", "--data-dir", str(data_dir)]))
    assert found in line
    assert not data_dir.exists()


def test_a_valid_override_passes_and_is_used(tmp_path: Path) -> None:
    prompts = tmp_path / "prompts"
    _override(prompts, "---\nvariables: topic_context\n---\nCUSTOM {{memory}}:\n{topic_context}\n")
    _override(prompts, "anything at all {nothing}", name="not_a_prompt_of_the_package")
    check_prompt_dir(prompts, "prompt_dir")
    settings = Settings(data_dir=tmp_path / "d", budget_tokens=900, prompt_dir=prompts)
    with TopicMemory(settings=settings, embedder=HashEmbedder()) as memory:
        window = memory.context("t", "hello")["context"]
    assert window["system_prompt"].startswith("CUSTOM {memory}:")


def test_an_override_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    (tmp_path / "en").mkdir()
    (tmp_path / "en" / "main_window.md").write_bytes(b"caf\xe9 {topic_context}")
    with pytest.raises(InputError, match="main_window.md: not UTF-8"):
        check_prompt_dir(tmp_path, "prompt_dir")


# ------------------------------------------------------------------------ integer ids


def test_an_integer_id_is_refused_instead_of_read_as_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(InputError, match=r"messages\[0\]: id must be a string, got the number 1"):
        check_records(
            [{"id": 1, "role": "user", "content": "a"}, {"id": "1", "role": "user", "content": "b"}]
        )
    path = tmp_path / "c.jsonl"
    rows = [{"id": "a", "role": "user", "content": "hi"}, {"id": 7, "role": "user", "content": "x"}]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), "utf-8")
    data_dir = tmp_path / "d"
    line = _one_line(capsys, main(["import", str(path), "--data-dir", str(data_dir)]))
    assert f"{path}:2: id must be a string, got the number 7" in line
    assert '("id": "7")' in line
    assert not data_dir.exists()
