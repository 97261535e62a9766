"""Structured summaries (seed 001 T3): cards whose facts cite message ids, checked, expanded."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import MemoryFactory
from langchain_openai import ChatOpenAI
from llm_wire import FakeOpenAI, Reply, Request, section

from langgraph_topics import Settings, TopicMemory
from langgraph_topics.cli.main import main
from langgraph_topics.errors import InputError
from langgraph_topics.roles.factory import build_roles
from langgraph_topics.roles.llm import CallPolicy, LlmBriefWriter, LlmTopicWindow
from langgraph_topics.roles.llm.retries import Backoff
from langgraph_topics.roles.native import NativeBriefWriter, NativeTopicWindow
from langgraph_topics.roles.protocols import TopicInfo
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.stores.embeddings import UseEmbedder
from langgraph_topics.stores.topic_store import JsonlTopicStore
from langgraph_topics.summaries import (
    CardError,
    SummaryCard,
    card_facts,
    card_json_schema,
    cited_ids,
    degeneration,
    repetition,
    validate_card,
)
from langgraph_topics.summaries.native import native_card
from langgraph_topics.tokens import estimate_tokens_by_script

POLICY = CallPolicy(backoff=Backoff(retries=0, base_seconds=0.001), format_retries=1, language="en")
TOPIC: TopicInfo = {
    "id": "topic-1",
    "name": "Service config",
    "brief": "Timeouts and storage of the service",
    "status": "active",
    "file": "topics/topic-1.jsonl",
}
SPLIT: list[StoredMessage] = [
    {"id": "m1", "role": "user", "content": "Should the timeout in config.rs stay at 15 seconds?"},
    {
        "id": "m2",
        "role": "assistant",
        "content": "We decided to raise it to 30 seconds because users said 15 was too short.",
    },
    {"id": "m3", "role": "user", "content": "Which database for the cache? Not sure yet."},
]
UNSPLIT: list[StoredMessage] = [
    {"id": "m9", "role": "user", "content": "What timeout did we choose for config.rs?"},
]


def good_card() -> dict[str, Any]:
    return {
        "version": 1,
        "text": "The timeout went from 15 to 30 seconds.",
        "topics": [{"name": "service timeout", "message_ids": ["m1", "m2"]}],
        "decisions": [
            {
                "what": "timeout 15 → 30 s",
                "why": "users said 15 was too short",
                "message_ids": ["m2"],
            }
        ],
        "unresolved": [{"item": "database for the cache", "message_ids": ["m3"]}],
        "entities": [{"name": "config.rs", "kind": "file", "message_ids": ["m1"]}],
        "tokens_saved": 40,
        "source": "llm",
    }


def card_json(**replaced: Any) -> str:
    facts = {k: v for k, v in good_card().items() if k in CARD_FACT_KEYS}
    facts.update(replaced)
    return json.dumps(facts, ensure_ascii=False)


CARD_FACT_KEYS = ("topics", "decisions", "unresolved", "entities")


def reply_with_card(card: str, summary: str = "The timeout is 30 seconds now.") -> str:
    return (
        "<topic_result>\n<relevance_score>0.8</relevance_score>\n"
        "<referenced_messages>\nm2\n</referenced_messages>\n"
        f"<summary>{summary}</summary>\n<card>{card}</card>\n</topic_result>"
    )


# --- the schema --------------------------------------------------------------------------------


def test_a_good_card_passes_and_the_schema_names_every_part() -> None:
    card = validate_card(good_card(), {"m1", "m2", "m3"})
    assert card == good_card()
    assert cited_ids(card) == ["m1", "m2", "m3"]
    schema = card_json_schema()
    assert set(schema["required"]) >= {"text", *CARD_FACT_KEYS, "tokens_saved"}


@pytest.mark.parametrize("missing", ["decisions", "text", "tokens_saved"])
def test_a_card_missing_a_field_is_refused_naming_it(missing: str) -> None:
    raw = good_card()
    del raw[missing]
    with pytest.raises(CardError, match=rf"^{missing}: Field required"):
        validate_card(raw)


def test_a_decision_without_its_reason_is_refused() -> None:
    raw = good_card()
    del raw["decisions"][0]["why"]
    with pytest.raises(CardError, match=r"decisions\.0\.why: Field required"):
        validate_card(raw)


def test_a_fact_without_message_ids_is_refused() -> None:
    raw = good_card()
    raw["unresolved"][0]["message_ids"] = []
    with pytest.raises(CardError, match=r"unresolved\.0\.message_ids: List should have at least"):
        validate_card(raw)
    del raw["unresolved"][0]["message_ids"]
    with pytest.raises(CardError, match=r"unresolved\.0\.message_ids: Field required"):
        validate_card(raw)


def test_ids_not_in_the_thread_are_refused_by_name() -> None:
    raw = good_card()
    raw["entities"][0]["message_ids"] = ["m1", "ghost-7"]
    with pytest.raises(CardError) as caught:
        validate_card(raw, {"m1", "m2", "m3"})
    assert str(caught.value) == "message ids not in the input: ghost-7 (entities.0)"
    assert "\n" not in str(caught.value)


# --- degenerate output -------------------------------------------------------------------------


def test_a_looping_text_is_degenerate_and_a_real_summary_is_not() -> None:
    loop = "The timeout is thirty seconds now. " * 12
    assert repetition(loop) is not None
    chinese_loop = "超时时间改成三十秒。" * 10
    assert repetition(chinese_loop) is not None
    assert repetition("- a\n- a\n- a") is not None
    real = (
        "The team raised the service timeout from 15 to 30 seconds after users said 15 was too "
        "short; the database for the cache is still open, and config.rs holds the timeout."
    )
    assert repetition(real) is None
    assert degeneration(validate_card(good_card())) is None


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda c: c["topics"][0].update(name="   "), "topics.0 is empty"),
        (
            lambda c: c["decisions"].extend([dict(c["decisions"][0]) for _ in range(2)]),
            "appears 3 times",
        ),
        (lambda c: c.update(topics=[], decisions=[], unresolved=[], entities=[]), "no facts"),
        (lambda c: c.update(text="same words again and again " * 10), "text:"),
    ],
)
def test_empty_repeated_or_looping_cards_are_degenerate(change: Any, reason: str) -> None:
    card = good_card()
    change(card)
    found = degeneration(validate_card(card))
    assert found is not None and reason in found


# --- the native card ---------------------------------------------------------------------------


def test_the_native_card_extracts_cited_facts_and_keeps_the_text() -> None:
    text = "Relevant points: timeout raised."
    card = native_card(SPLIT, text, name="config", count_tokens=estimate_tokens_by_script)
    validate_card(card, {m["id"] for m in SPLIT})
    assert card["text"] == text and card["source"] == "native"
    [decision] = card["decisions"]
    assert decision["why"] == "because users said 15 was too short"
    assert decision["message_ids"] == ["m2"]
    assert {"name": "config.rs", "kind": "file", "message_ids": ["m1"]} in card["entities"]
    assert [f["message_ids"] for f in card["unresolved"]] == [["m3"]]
    assert card["tokens_saved"] > 0


def test_a_decision_without_a_stated_reason_cites_the_question_it_answers() -> None:
    messages: list[StoredMessage] = [
        {"id": "q", "role": "user", "content": "Which hotel should we book in Kyoto?"},
        {"id": "a", "role": "assistant", "content": "Let's go with the ryokan near Gion."},
    ]
    card = native_card(messages, "", name="Kyoto", count_tokens=estimate_tokens_by_script)
    [decision] = card["decisions"]
    assert decision["why"].startswith("in answer to: Which hotel")
    assert decision["message_ids"] == ["q", "a"]


# --- a real thread with the native back ends ---------------------------------------------------


def subject_history() -> list[dict[str, str]]:
    lines = [
        ("user", "For the billing service, should the timeout in config.rs stay at 15 seconds?"),
        ("assistant", "We decided to raise it to 30 seconds because users said 15 was too short."),
        ("user", "Let's plan the Kyoto trip for next April, cherry blossom season."),
        ("assistant", "Book a ryokan near Gion early because April sells out fast."),
        ("user", "My sourdough starter smells of acetone. Is it dead?"),
        ("assistant", "Not dead, just hungry: feed it flour and water twice a day."),
    ]
    records = []
    for turn in range(8):
        for index, (role, text) in enumerate(lines):
            number = turn * len(lines) + index
            records.append({"id": f"h{number}", "role": role, "content": f"{text} (round {turn})"})
    return records


def all_cards_cite_the_thread(
    memory: TopicMemory, thread: str, cards: list[SummaryCard]
) -> dict[str, StoredMessage]:
    held = {m["id"]: m for m in memory.transcript(thread)}
    assert cards
    for card in cards:
        for field_name, index, fact in card_facts(card):
            assert fact["message_ids"], (field_name, index)
            assert set(fact["message_ids"]) <= set(held), (field_name, fact)
            expanded = memory.expand(thread, fact)
            assert [m["id"] for m in expanded] == list(dict.fromkeys(fact["message_ids"]))
            assert [m["content"] for m in expanded] == [
                held[i]["content"] for i in dict.fromkeys(fact["message_ids"])
            ]
    return held


def test_native_cards_cite_messages_of_the_thread_and_expand_to_them(
    make_memory: MemoryFactory,
) -> None:
    memory = make_memory(budget=700)
    thread = "native"
    memory.import_messages(thread, subject_history())
    memory.chat(thread, "What timeout did we decide for the billing service in config.rs?")
    topics = memory.topics(thread)
    assert len(topics) >= 2
    brief_cards = [t["brief_card"] for t in topics]
    for topic, card in zip(topics, brief_cards, strict=True):
        assert card["text"] == topic["brief"] and card["source"] == "native"
    all_cards_cite_the_thread(memory, thread, brief_cards)

    report = memory.context(thread, "Why did we raise the timeout in config.rs?")
    with_summary = [r for r in report["topic_results"] if r["summary"]]
    assert with_summary, "a topic should have answered about the timeout"
    result_cards = [r["summary_card"] for r in with_summary]
    for result, card in zip(with_summary, result_cards, strict=True):
        assert card["text"] == result["summary"]
    all_cards_cite_the_thread(memory, thread, result_cards)
    decisions = [d for card in result_cards + brief_cards for d in card["decisions"]]
    assert any("users said 15 was too short" in d["why"] for d in decisions)
    # The main window shows the natural-language summary, never the JSON card.
    assert '"message_ids"' not in report["context"]["system_prompt"]
    assert memory.check(thread).ok


def test_expand_names_unknown_ids_in_one_line(make_memory: MemoryFactory) -> None:
    memory = make_memory(budget=700)
    memory.import_messages("t", subject_history()[:6])
    assert [m["id"] for m in memory.expand("t", ["h1", "h0", "h1"])] == ["h1", "h0"]
    assert memory.expand("t", "h5")[0]["content"].startswith("Not dead")
    with pytest.raises(InputError, match=r"^thread 't' holds no message ghost-1, ghost-2$"):
        memory.expand("t", {"item": "x", "message_ids": ["h0", "ghost-1", "ghost-2"]})
    with pytest.raises(InputError, match="not a card fact"):
        memory.expand("t", {"what": "no ids"})
    with pytest.raises(InputError, match="no thread 'nobody'"):
        memory.expand("nobody", ["h0"])


def test_the_expand_command_prints_the_originals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    source = tmp_path / "history.jsonl"
    source.write_text("\n".join(json.dumps(r) for r in subject_history()[:6]) + "\n", "utf-8")
    assert main(["import", str(source), "--thread", "bob", "--data-dir", str(data)]) == 0
    capsys.readouterr()
    assert main(["expand", "h1", "h2", "--thread", "bob", "--data-dir", str(data)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert re.match(r"\[[^]]+\] assistant \(h1\): We decided to raise it to 30 seconds", out[0])
    assert re.match(r"\[[^]]+\] user \(h2\): Let's plan the Kyoto trip", out[1])
    assert main(["expand", "zz", "--thread", "bob", "--data-dir", str(data), "--json"]) == 2
    error = capsys.readouterr().err
    assert error.strip() == "langgraph-topics: error: thread 'bob' holds no message zz"


# --- the store ---------------------------------------------------------------------------------


def test_brief_cards_are_stored_beside_the_brief_and_old_briefs_still_load(tmp_path: Path) -> None:
    store = JsonlTopicStore(tmp_path)
    topic = store.create_topic("Config", "")
    store.append(topic["id"], SPLIT)
    store.set_brief(topic["id"], "Config", "old brief")  # as written before cards existed
    assert "brief_card" not in JsonlTopicStore(tmp_path).meta(topic["id"])
    card = validate_card(good_card())
    store.set_brief(topic["id"], "Config", "new brief", card=card)
    reopened = JsonlTopicStore(tmp_path).meta(topic["id"])
    assert reopened["brief"] == "new brief" and reopened["brief_card"] == card
    store.set_brief(topic["id"], "Config", "newest brief")  # a later brief without a card
    assert "brief_card" not in JsonlTopicStore(tmp_path).meta(topic["id"])


# --- the LLM back ends, through the wire -------------------------------------------------------


@pytest.fixture
def wire() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI()
    yield server
    server.close()


def chat_model(wire: FakeOpenAI) -> ChatOpenAI:
    return ChatOpenAI(model="fake", base_url=wire.url, api_key="dummy", max_retries=0, timeout=5)  # type: ignore[call-arg]


def test_a_model_card_is_parsed_and_checked(wire: FakeOpenAI, embedder: UseEmbedder) -> None:
    wire.script("topic_window", Reply(reply_with_card(card_json())))
    llm = LlmTopicWindow(chat_model(wire), NativeTopicWindow(embedder), POLICY, summaries=True)
    verdict = llm.evaluate(TOPIC, SPLIT, UNSPLIT)
    card = verdict["card"]
    assert card["source"] == "llm" and card["text"] == "The timeout is 30 seconds now."
    assert card["decisions"][0]["message_ids"] == ["m2"]
    assert card["tokens_saved"] > 0
    [request] = wire.requests
    assert '"message_ids"' in request.system and "<card>" in request.system
    # Without summaries (the default) the prompt asks for the score and references only.
    wire.script("topic_window", Reply(reply_with_card(card_json())))
    LlmTopicWindow(chat_model(wire), NativeTopicWindow(embedder), POLICY).evaluate(
        TOPIC, SPLIT, UNSPLIT
    )
    plain = wire.requests[-1].system
    assert "<referenced_messages>" in plain and "<summary>" not in plain and "<card>" not in plain


def test_a_card_citing_unknown_ids_is_asked_again_then_accepted(
    wire: FakeOpenAI, embedder: UseEmbedder
) -> None:
    unknown = card_json(entities=[{"name": "x.py", "kind": "file", "message_ids": ["zz-9"]}])
    wire.script(
        "topic_window", Reply(reply_with_card(unknown)), Reply(reply_with_card(card_json()))
    )
    llm = LlmTopicWindow(chat_model(wire), NativeTopicWindow(embedder), POLICY)
    verdict = llm.evaluate(TOPIC, SPLIT, UNSPLIT)
    assert verdict["card"]["source"] == "llm"
    first, retry = wire.requests
    assert "message ids not in the input: zz-9" in retry.prompt_text
    assert "<topic_result>" in retry.prompt_text


def test_a_malformed_card_twice_falls_back_to_the_native_window(
    wire: FakeOpenAI, embedder: UseEmbedder
) -> None:
    missing = json.dumps({"topics": [{"name": "t", "message_ids": ["m1"]}]})
    wire.script(
        "topic_window", Reply(reply_with_card("{not json")), Reply(reply_with_card(missing))
    )
    native = NativeTopicWindow(embedder)
    verdict = LlmTopicWindow(chat_model(wire), native, POLICY).evaluate(TOPIC, SPLIT, UNSPLIT)
    assert len(wire.requests) == 2
    assert "not valid JSON" in wire.requests[1].prompt_text
    assert verdict == native.evaluate(TOPIC, SPLIT, UNSPLIT)
    assert verdict["card"]["source"] == "native"


@pytest.mark.parametrize(
    "reply",
    [
        reply_with_card(card_json(), summary="The timeout is thirty seconds. " * 12),
        reply_with_card(
            card_json(unresolved=[{"item": "database for the cache", "message_ids": ["m3"]}] * 3)
        ),
    ],
    ids=["looping summary", "repeated facts"],
)
def test_degenerate_output_uses_the_native_summary_at_once(
    wire: FakeOpenAI, embedder: UseEmbedder, reply: str
) -> None:
    wire.script("topic_window", Reply(reply), Reply(reply_with_card(card_json())))
    native = NativeTopicWindow(embedder)
    verdict = LlmTopicWindow(chat_model(wire), native, POLICY).evaluate(TOPIC, SPLIT, UNSPLIT)
    assert len(wire.requests) == 1, "a loop is not asked again"
    expected = native.evaluate(TOPIC, SPLIT, UNSPLIT)
    assert verdict["summary"] == expected["summary"] and verdict["summary"]
    assert verdict["card"]["source"] == "native"


def test_the_brief_writer_returns_the_models_card_or_a_native_one(wire: FakeOpenAI) -> None:
    brief = "<topic_brief><name>Config</name><brief>Timeout raised to 30 s.</brief>{}</topic_brief>"
    wire.script(
        "brief_writer",
        Reply(brief.format(f"<card>{card_json()}</card>")),
        Reply(brief.format("")),
    )
    writer = LlmBriefWriter(chat_model(wire), NativeBriefWriter(), POLICY, brief_bytes=512)
    name, text, card = writer.write_with_card(TOPIC, SPLIT)
    assert (name, text, card["source"], card["text"]) == ("Config", text, "llm", text)
    assert card["unresolved"][0]["message_ids"] == ["m3"]
    name, text, card = writer.write_with_card(TOPIC, SPLIT)  # no <card>: a native one
    assert card["source"] == "native" and card["text"] == "Timeout raised to 30 s."
    validate_card(card, {m["id"] for m in SPLIT})


def scripted_card(ids: list[str], name: str) -> str:
    return json.dumps(
        {
            "topics": [{"name": name, "message_ids": ids[:2]}],
            "decisions": [{"what": f"keep {name}", "why": "asked", "message_ids": ids[-1:]}],
            "unresolved": [],
            "entities": [],
        }
    )


def brief_writer_with_card(request: Request) -> Reply:
    ids = re.findall(r'<message id="([^"]+)"', section(request.user, "messages"))
    name = "Topic " + ids[0]
    return Reply(
        f"<topic_brief><name>{name}</name><brief>About {name}</brief>"
        f"<card>{scripted_card(ids, name)}</card></topic_brief>"
    )


def topic_window_with_card(request: Request) -> Reply:
    # The prompt numbers its messages; the reply names them by number.
    ids = re.findall(r'<m n="([^"]+)"', section(request.user, "split_messages"))
    return Reply(
        "<topic_result><relevance_score>0.8</relevance_score>"
        f"<referenced_messages>{ids[0]}</referenced_messages>"
        f"<summary>What {ids[0]} said</summary>"
        f"<card>{scripted_card(ids, 'read')}</card></topic_result>"
    )


def test_model_cards_from_a_whole_conversation_expand_to_the_originals(
    wire: FakeOpenAI, tmp_path: Path, embedder: UseEmbedder
) -> None:
    wire.on("brief_writer", brief_writer_with_card)
    wire.on("topic_window", topic_window_with_card)
    wire.on("index_router", lambda request: Reply("<topic_routing></topic_routing>"))
    settings = Settings(
        data_dir=tmp_path / "memory",
        budget_tokens=700,
        language="en",
        retry_backoff_seconds=0.001,
        strong_model=None,
        cheap_model=None,
        role_models={},
        topic_window_summaries=True,
    )
    roles = build_roles(settings, cheap=chat_model(wire), embedder=embedder)
    with TopicMemory(settings=settings, roles=roles, embedder=embedder) as memory:
        memory.import_messages("llm", subject_history())
        topics = memory.topics("llm")
        # The native splitter names and briefs a topic it creates; the model rewrites the brief
        # (and writes its card) when the topic grows.
        sources = {t["name"]: t["brief_card"]["source"] for t in topics}
        assert "llm" in sources.values()
        assert all((s == "llm") == n.startswith("Topic ") for n, s in sources.items()), sources
        held = all_cards_cite_the_thread(memory, "llm", [t["brief_card"] for t in topics])
        report = memory.context("llm", "What did we decide about the timeout?")
        # The topic the model read carries its card; a topic read natively (the governor gave
        # it no call) carries a native one.
        cards = [
            r["summary_card"]
            for r in report["topic_results"]
            if r["summary"] and r.get("window") != "native"
        ]
        assert cards and all(c["source"] == "llm" for c in cards)
        all_cards_cite_the_thread(memory, "llm", cards)
        first = cards[0]["topics"][0]
        assert memory.expand("llm", first)[0] == held[first["message_ids"][0]]
