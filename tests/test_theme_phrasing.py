"""Themes phrased by the cheap model from their material only (issue 38 item 3, seed 004 §3)."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_runner import run_cli
from history_threads import DATABASE_THREAD, LEDGER_THREAD, thread_records
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_openai import ChatOpenAI
from llm_wire import FakeOpenAI, Reply
from pydantic import Field

from langgraph_topics import Settings, TopicMemory
from langgraph_topics.history.phrasing import theme_material
from langgraph_topics.history.view import history_view
from langgraph_topics.roles.factory import build_roles
from langgraph_topics.roles.llm.calling import CallPolicy
from langgraph_topics.roles.llm.retries import Backoff
from langgraph_topics.roles.llm.theme_phrasing import (
    LlmThemePhraser,
    parse_phrases,
    render_material,
)
from langgraph_topics.state.working_set import stored_view, unsplit_messages

THREAD = "db"
POLICY = CallPolicy(backoff=Backoff(retries=0, base_seconds=0.0), format_retries=1)


def _settings(root: Path) -> Settings:
    return Settings(data_dir=root, budget_tokens=600, keep_recent=6)


class ThemeNamer(GenericFakeChatModel):
    """Names every theme it is shown ``Named <keyword>``; keeps every prompt it was sent."""

    messages: Iterator[AIMessage | str] = Field(default_factory=lambda: iter(()))
    seen: list[str] = Field(default_factory=list)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        prompt = "\n".join(m.text for m in messages)
        self.seen.append(prompt)
        shown = re.findall(r'<theme id="([^"]+)">\n<keywords>([^,<]+)', prompt)
        reply = "".join(
            f'<theme id="{theme_id}"><name>Named {keyword}</name>'
            f"<summary>How {keyword} went</summary></theme>"
            for theme_id, keyword in shown
        )
        text = f"<theme_phrases>{reply}</theme_phrases>"
        return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])


class Unreachable(GenericFakeChatModel):
    """A provider that is down."""

    messages: Iterator[AIMessage | str] = Field(default_factory=lambda: iter(()))
    calls: int = 0

    def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
        self.calls += 1
        raise ConnectionError("connection refused")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The database decision among sourdough and Kyoto talk, split offline (no model)."""
    root = tmp_path_factory.mktemp("phrasing") / "data"
    with TopicMemory(settings=_settings(root)) as memory:
        memory.import_messages(THREAD, thread_records(DATABASE_THREAD))
    return root


def _opened(root: Path, model: GenericFakeChatModel | None) -> TopicMemory:
    """A memory over ``root`` whose themes ``model`` phrases (as the factory wires it)."""
    memory = TopicMemory(settings=_settings(root))
    if model is not None:
        memory.services.roles.theme_phraser = LlmThemePhraser(model, POLICY)
    return memory


def test_phrased_names_reach_themes_and_trace_beside_the_native_name(data_dir: Path) -> None:
    namer = ThemeNamer()
    with _opened(data_dir, namer) as memory:
        themes = memory.themes(THREAD)
        postgres = next(t for t in themes if t["theme"] == "Postgres")
        assert postgres["phrased"] == {"name": "Named Postgres", "summary": "How Postgres went"}
        trace = memory.trace(THREAD, "Postgres")
        assert trace is not None and trace["theme"] == "Postgres"
        assert trace["phrased"]["name"] == "Named Postgres"
        calls = len(namer.seen)
        memory.themes(THREAD)
        memory.trace(THREAD, "Postgres")
        assert len(namer.seen) == calls == 1  # the same view is phrased once


def test_the_model_is_shown_the_theme_material_only(data_dir: Path) -> None:
    namer = ThemeNamer()
    with _opened(data_dir, namer) as memory:
        trace = memory.trace(THREAD, "Postgres")
    assert trace is not None and len(namer.seen) == 1
    prompt = namer.seen[0]
    assert "Postgres" in prompt and "switched SQLite" in prompt
    for unrelated in ("sourdough", "acetone", "Kyoto", "Fushimi", "ryokan"):
        assert unrelated not in prompt
    # Exactly the theme's material, as the history layer selected it, and nothing else.
    with TopicMemory(settings=_settings(data_dir)) as memory:
        values = memory.state(THREAD)
        stores = memory.services.branch_stores(THREAD, values)
        unsplit = unsplit_messages(stored_view(values["messages"]), stores.topic_store)
        view = history_view(stores, unsplit)
    postgres = next(t for t in view.themes if t.name == "Postgres")
    shown = prompt.split("<themes>\n", 1)[1].split("\n</themes>", 1)[0]
    assert shown == render_material([theme_material(view, postgres)])


@pytest.mark.parametrize(
    "replies",
    [["no element here", "still none"], ["<theme_phrases></theme_phrases>"] * 2, ["", ""]],
    ids=["malformed", "empty-element", "empty"],
)
def test_a_reply_that_cannot_be_used_keeps_the_native_names(
    data_dir: Path, replies: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    model = GenericFakeChatModel(messages=iter(AIMessage(r) for r in replies))
    with caplog.at_level(logging.WARNING), _opened(data_dir, model) as memory:
        themes = memory.themes(THREAD)
        trace = memory.trace(THREAD, "Postgres")
    assert themes and all("phrased" not in t for t in themes)
    assert trace is not None and trace["theme"] == "Postgres" and "phrased" not in trace
    warned = [r for r in caplog.records if "theme_phrasing" in r.getMessage()]
    assert len(warned) == 1 and "native" in warned[0].getMessage()


def test_a_raising_model_keeps_the_native_names(
    data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    down = Unreachable()
    with caplog.at_level(logging.WARNING), _opened(data_dir, down) as memory:
        themes = memory.themes(THREAD)
        trace = memory.trace(THREAD, "Postgres")
    assert down.calls == 1  # asked once for the view; the failure is not asked again
    assert themes and all("phrased" not in t for t in themes)
    assert trace is not None and "phrased" not in trace
    warned = [r.getMessage() for r in caplog.records if "theme_phrasing" in r.getMessage()]
    assert len(warned) == 1 and "connection refused" in warned[0]


def test_without_a_cheap_model_no_model_is_asked(data_dir: Path, tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, cheap_model=None, strong_model=None, role_models={})
    assert build_roles(settings, embedder=object()).theme_phraser is None  # type: ignore[arg-type]
    namer = ThemeNamer()
    wired = build_roles(settings, cheap=namer, embedder=object())  # type: ignore[arg-type]
    assert isinstance(wired.theme_phraser, LlmThemePhraser)
    with _opened(data_dir, None) as memory:
        assert memory.services.roles.theme_phraser is None
        themes = memory.themes(THREAD)
        trace = memory.trace(THREAD, "Postgres")
    assert themes and all("phrased" not in t for t in themes)
    assert trace is not None and "phrased" not in trace
    assert namer.seen == []


def test_a_chat_turn_phrases_nothing(tmp_path: Path) -> None:
    namer = ThemeNamer()
    with _opened(tmp_path / "data", namer) as memory:
        memory.import_messages(THREAD, thread_records(DATABASE_THREAD[:3]))
        memory.chat(THREAD, "We'll use Postgres for the inventory app, settled.")
    assert namer.seen == []


def test_a_chinese_thread_gets_the_chinese_prompt(tmp_path: Path) -> None:
    namer = ThemeNamer()
    with _opened(tmp_path / "data", namer) as memory:
        memory.import_messages("zh", thread_records(LEDGER_THREAD))
        themes = memory.themes("zh")
    assert themes and len(namer.seen) == 1
    assert "只回复" in namer.seen[0]
    assert all(t["phrased"]["name"].startswith("Named ") for t in themes if "phrased" in t)


def test_material_is_bounded_and_the_reply_is_checked(data_dir: Path) -> None:
    with TopicMemory(settings=_settings(data_dir)) as memory:
        stores = memory.services.branch_stores(THREAD, memory.state(THREAD))
        view = history_view(stores)
    material = theme_material(view, view.themes[0])
    assert len(material["units"]) <= 8 and len(material["keywords"]) <= 8
    known = {material["theme_id"]}
    tid = material["theme_id"]
    long_name = "x" * 500
    phrases = parse_phrases(
        f'<theme_phrases><theme id="{tid}"><name>{long_name}</name><summary>s</summary></theme>'
        '<theme id="other"><name>n</name><summary>s</summary></theme></theme_phrases>',
        known,
    )
    assert list(phrases) == [tid] and len(phrases[tid]["name"]) == 60


def test_the_commands_show_the_phrased_name(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    original = TopicMemory.__init__

    def opened(self: TopicMemory, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self.services.roles.theme_phraser = LlmThemePhraser(ThemeNamer(), POLICY)

    monkeypatch.setattr(TopicMemory, "__init__", opened)
    base = ["--data-dir", str(data_dir), "--thread", THREAD]
    status, out, err = run_cli(capsys, "themes", *base)
    assert status == 0 and "Named Postgres" in out and not err
    status, out, err = run_cli(capsys, "trace", *base, "Postgres")
    assert status == 0 and "theme: Named Postgres (Postgres)" in out
    assert "summary: How Postgres went" in out


def test_through_the_wire_a_reply_is_used_and_a_timeout_falls_back(data_dir: Path) -> None:
    """ChatOpenAI against the local scripted server: the prompt, the reply, a hung provider."""
    with TopicMemory(settings=_settings(data_dir)) as memory:
        stores = memory.services.branch_stores(THREAD, memory.state(THREAD))
        view = history_view(stores)
    postgres = next(t for t in view.themes if t.name == "Postgres")
    material = theme_material(view, postgres)
    wire = FakeOpenAI()
    try:
        wire.script(
            "theme_phrasing",
            Reply(
                f'<theme_phrases><theme id="{postgres.id}"><name>The inventory database'
                "</name><summary>Postgres, then SQLite, then Postgres again</summary>"
                "</theme></theme_phrases>"
            ),
            Reply("<theme_phrases></theme_phrases>", delay=2.0),
        )

        def chat(timeout: float) -> ChatOpenAI:
            return ChatOpenAI(
                model="fake", base_url=wire.url, api_key="dummy", max_retries=0, timeout=timeout
            )  # type: ignore[call-arg]

        phrased = LlmThemePhraser(chat(5.0), POLICY).phrase([material])
        assert phrased == {
            postgres.id: {
                "name": "The inventory database",
                "summary": "Postgres, then SQLite, then Postgres again",
            }
        }
        sent = wire.of_role("theme_phrasing")[0].user
        assert "Postgres" in sent and "sourdough" not in sent
        assert LlmThemePhraser(chat(0.2), POLICY).phrase([material]) == {}
    finally:
        wire.close()
