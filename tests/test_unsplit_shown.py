"""The unsplit messages are worked out once per fan-out, and again for any other list."""

from __future__ import annotations

from dataclasses import replace

import pytest

from langgraph_topics.namespace import unsplit_shown as memo
from langgraph_topics.namespace.policy import NamespacePolicy
from langgraph_topics.namespace.unsplit_shown import shown_unsplit
from langgraph_topics.namespace.window import windowed_messages
from langgraph_topics.prompts.language import detect_language
from langgraph_topics.settings import Settings
from langgraph_topics.state.fan_out_memo import FanOutMemo
from langgraph_topics.state.records import StoredMessage

BIG = "line\n" * 80


def _unsplit(count: int, *, chinese: bool = False) -> list[StoredMessage]:
    text = "我们明天去京都看红叶" if chinese else "shall we go to Kyoto tomorrow"
    messages: list[StoredMessage] = [
        {"id": f"m{n}", "role": "user", "content": f"{text} {n}"} for n in range(count)
    ]
    messages.append({"id": "t1", "role": "tool", "content": BIG, "name": "grep"})
    return messages


def _expected(unsplit: list[StoredMessage], settings: Settings) -> tuple[object, ...]:
    """What each topic window worked out before the memo."""
    language = detect_language((m["content"] for m in unsplit[-10:]), settings.language)
    policy = NamespacePolicy.of(settings)
    shown = windowed_messages(
        unsplit,
        policy,
        language,
        settings.prompt_dir,
        preview_chars=settings.namespace_preview_chars,
    )
    return language, policy, shown, {m["id"] for m in unsplit}


def _got(unsplit: list[StoredMessage], settings: Settings) -> tuple[object, ...]:
    shared = shown_unsplit(unsplit, settings)
    return shared.language, shared.policy, list(shared.shown), set(shared.ids)


def test_one_list_is_worked_out_once(monkeypatch: pytest.MonkeyPatch) -> None:
    settings, unsplit = Settings(), _unsplit(12)
    calls: list[int] = []

    def counting(messages: object, *args: object, **kwargs: object) -> object:
        given = list(messages)  # type: ignore[call-overload]
        calls.append(len(given))
        return windowed_messages(given, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(memo, "windowed_messages", counting)
    first = shown_unsplit(unsplit, settings)
    assert shown_unsplit(unsplit, settings) is first
    assert calls == [13]
    assert _got(unsplit, settings) == _expected(unsplit, settings)
    assert first.shown[-1]["content"] != BIG  # the large tool result is shown as a reference


def test_a_list_changed_in_place_is_worked_out_again() -> None:
    settings, unsplit = Settings(), _unsplit(12)
    shown_unsplit(unsplit, settings)
    unsplit.append({"id": "new", "role": "user", "content": "and then?"})
    assert _got(unsplit, settings) == _expected(unsplit, settings)
    unsplit[:] = _unsplit(12, chinese=True)  # the same length, other records
    assert _got(unsplit, settings)[0] == "zh"
    assert _got(unsplit, settings) == _expected(unsplit, settings)


def test_an_equal_list_or_other_settings_are_worked_out_anew() -> None:
    settings, unsplit = Settings(), _unsplit(3)
    first = shown_unsplit(unsplit, settings)
    assert shown_unsplit(list(unsplit), settings) is not first
    english = replace(settings, language="en", tool_namespace=False)
    chinese = _unsplit(3, chinese=True)
    assert _got(chinese, english) == _expected(chinese, english)
    assert _got(chinese, english)[0] == "en"
    assert _got(chinese, settings) == _expected(chinese, settings)


def test_the_memo_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memo, "MEMO", FanOutMemo(entries=3))
    settings = Settings()
    lists = [_unsplit(n) for n in range(10)]
    for unsplit in lists:
        shown_unsplit(unsplit, settings)
        assert len(memo.MEMO) <= 3
    assert all(_got(u, settings) == _expected(u, settings) for u in lists)
