"""Per-run settings: ``topic_memory`` in the run's context or ``config["configurable"]``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_topics import Settings, TopicContext, TopicMemory, TopicServices, build_graph
from langgraph_topics.errors import InputError
from langgraph_topics.integrations import with_topic_memory
from langgraph_topics.roles.llm import LlmResponder, LlmTopicWindow
from langgraph_topics.roles.native import native_roles
from langgraph_topics.settings import check_run_settings
from langgraph_topics.stores.embeddings import UseEmbedder


@pytest.fixture
def services(tmp_path: Path, embedder: UseEmbedder) -> TopicServices:
    settings = Settings(data_dir=tmp_path / "data", budget_tokens=2000, language="auto")
    return TopicServices.open(settings, embedder=embedder)


@pytest.fixture
def memory(tmp_path: Path, embedder: UseEmbedder) -> Iterator[TopicMemory]:
    settings = Settings(data_dir=tmp_path / "m", budget_tokens=2000)
    with TopicMemory(settings=settings, embedder=embedder) as memory:
        yield memory


def _turn(text: str) -> dict[str, Any]:
    return {"messages": [HumanMessage(text, id=f"u-{abs(hash(text))}")]}


def test_context_and_configurable_set_the_budget_of_one_run(services: TopicServices) -> None:
    graph = build_graph(InMemorySaver())
    runs = [
        ("plain", None, None, 2000),
        ("context", {"budget_tokens": 1200}, None, 1200),
        ("configurable", None, {"budget_tokens": 900, "language": "en"}, 900),
        ("both", {"budget_tokens": 1500}, {"budget_tokens": 900}, 1500),  # the context wins
    ]
    for thread, in_context, in_configurable, budget in runs:
        configurable: dict[str, Any] = {"thread_id": thread}
        if in_configurable:
            configurable["topic_memory"] = in_configurable
        values = graph.invoke(
            _turn("Let's plan a trip to Kyoto next April."),
            {"configurable": configurable},
            context=TopicContext(services=services, topic_memory=in_context),  # type: ignore[typeddict-item]
        )
        assert values["context"]["budget"] == budget, thread
        assert values["estimate"]["budget"] == budget
    # The services themselves are unchanged.
    assert services.settings.budget_tokens == 2000


def test_run_services_share_the_stores_and_cache_their_roles(
    services: TopicServices,
) -> None:
    small = services.with_run_settings({"budget_tokens": 1200})
    assert (
        small.settings.budget_tokens == 1200
        and small.settings.data_dir == services.settings.data_dir
    )
    # One store cache per data directory: never a second store on a thread's directory.
    assert small._stores is services._stores and small._lock is services._lock
    assert small.stores("t") is services.stores("t")
    assert small.role_stats is services.role_stats
    # Role back ends are built once per distinct settings, and rebuilt for the new budget.
    assert services.with_run_settings({"budget_tokens": 1200}) is small
    assert small.roles is not services.roles
    other = services.with_run_settings({"budget_tokens": 1300})
    assert other.roles is not small.roles
    # A dry run (context query) keeps its in-memory writes and shares the role cache.
    dry = services.dry_run().with_run_settings({"budget_tokens": 1200})
    assert dry.writes_in_memory and dry.roles is small.roles
    # Settings equal to the services' own change nothing.
    assert services.with_run_settings({"budget_tokens": 2000}) is services
    assert services.with_run_settings({}) is services


def test_models_per_tier_and_prompt_dir_per_run(
    services: TopicServices, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # models are built, never called
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    run = services.with_run_settings(
        {
            "strong_model": "openai:gpt-4o",
            "cheap_model": "openai:gpt-4o-mini",
            "role_models": {"index_router": "openai:gpt-4.1-nano"},
            "prompt_dir": str(prompts),
            "language": "zh",
        }
    )
    assert run.settings.strong_model == "openai:gpt-4o"
    assert run.settings.role_models == {"index_router": "openai:gpt-4.1-nano"}
    assert run.settings.prompt_dir == prompts and run.settings.language == "zh"
    assert isinstance(run.roles.responder, LlmResponder)
    assert isinstance(run.roles.topic_window, LlmTopicWindow)
    assert run.roles.responder.policy.prompt_dir == prompts
    assert run.roles.responder.policy.language == "zh"
    assert not isinstance(services.roles.responder, LlmResponder)  # the base stays native


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"budget_tokens": 100}, "topic_memory.budget_tokens=100: must be at least 250"),
        ({"budget_tokens": "1200"}, "topic_memory.budget_tokens='1200': must be a whole number"),
        ({"budget_tokens": True}, "topic_memory.budget_tokens=True"),
        ({"language": "fr"}, "topic_memory.language='fr': must be one of auto, zh, en"),
        ({"budget": 1200}, "topic_memory.budget: unknown setting; known: budget_tokens"),
        ({"role_models": {"writer": "openai:x"}}, "topic_memory.role_models.writer: unknown role"),
        ({"strong_model": 4}, "topic_memory.strong_model=4: must be a model string"),
        ({"prompt_dir": "/no/such/dir"}, "topic_memory.prompt_dir='/no/such/dir': is not a dir"),
        ([1200], "topic_memory must be an object of settings"),
    ],
)
def test_invalid_run_settings_fail_with_one_line_naming_the_setting(
    settings: Any, named: str
) -> None:
    with pytest.raises(InputError) as raised:
        check_run_settings(settings)
    assert str(raised.value).startswith(named)
    assert "\n" not in str(raised.value)


def test_invalid_context_settings_fail_before_anything_is_written(
    services: TopicServices,
) -> None:
    saver = InMemorySaver()
    graph = build_graph(saver)
    config: Any = {"configurable": {"thread_id": "bad"}}
    with pytest.raises(InputError, match=r"^topic_memory\.budget_tokens=199: must be at least"):
        graph.invoke(
            _turn("hello"),
            config,
            context={"services": services, "topic_memory": {"budget_tokens": 199}},
        )
    assert saver.get_tuple(config) is None  # no checkpoint: the run never started
    # A model string naming no provider fails as early, naming the run setting.
    with pytest.raises(InputError, match=r"^topic_memory\.strong_model='nope:x': unknown model"):
        TopicContext(services=services, topic_memory={"strong_model": "nope:x"})
    # Settings sent where the services go are refused, pointing at topic_memory.
    with pytest.raises(InputError, match="put per-run settings under 'topic_memory'"):
        TopicContext(services={"budget_tokens": 1200})
    assert not (Path(services.settings.data_dir) / "threads").exists()


def test_invalid_configurable_settings_fail_before_the_stores_are_touched(
    services: TopicServices,
) -> None:
    graph = build_graph(InMemorySaver())
    config: Any = {"configurable": {"thread_id": "bad", "topic_memory": {"language": "fr"}}}
    with pytest.raises(InputError, match=r"^topic_memory\.language='fr'"):
        graph.invoke(_turn("hello"), config, context=TopicContext(services=services))
    assert not (Path(services.settings.data_dir) / "threads").exists()


def test_services_with_roles_given_in_code_refuse_per_run_models(
    tmp_path: Path, embedder: UseEmbedder
) -> None:
    roles = native_roles(embedder)
    services = TopicServices.open(Settings(data_dir=tmp_path / "d"), roles=roles, embedder=embedder)
    budget = services.with_run_settings({"budget_tokens": 1200})
    assert budget.roles is roles and budget.settings.budget_tokens == 1200
    with pytest.raises(InputError, match=r"^topic_memory\.strong_model: these services were given"):
        services.with_run_settings({"strong_model": "openai:gpt-4o"})


def test_wrapper_takes_run_settings_from_its_config(memory: TopicMemory) -> None:
    chat = with_topic_memory(FakeListChatModel(responses=["Sure."]), memory)
    config: Any = {"configurable": {"thread_id": "w", "topic_memory": {"budget_tokens": 1200}}}
    assert chat.invoke("Let's plan a trip to Kyoto.", config).content == "Sure."
    assert memory.state("w")["context"]["budget"] == 1200
    assert memory.settings.budget_tokens == 2000
    config["configurable"]["topic_memory"] = {"budget_tokens": 150}
    with pytest.raises(InputError, match=r"^topic_memory\.budget_tokens=150"):
        chat.invoke("And the hotel?", config)
    assert len(memory.transcript("w")) == 2  # nothing recorded
