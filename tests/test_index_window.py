"""The topic index window as seed 000 §2–3 and §6.3 specify it (issue 37 item 4).

Its input holds the recently active topics' briefs, the searched briefs and the time index;
it is offered as many candidates as the rank quota can take; and a "new topic" verdict is
honoured by the next split.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest
from conftest import MemoryFactory
from conversations import subject_records
from fakes import with_roles
from langchain_openai import ChatOpenAI
from llm_wire import FakeOpenAI, Reply

import langgraph_topics.nodes.activate as activate_node
from langgraph_topics.activation.grey import activation_quota
from langgraph_topics.activation.index_window import candidate_count, index_window
from langgraph_topics.roles.llm import CallPolicy, LlmIndexRouter
from langgraph_topics.roles.llm.index_router import parse_index_routing
from langgraph_topics.roles.llm.retries import Backoff
from langgraph_topics.roles.llm.xml_reply import ReplyFormatError
from langgraph_topics.roles.protocols import Roles, SplitPlan, Splitter, TopicInfo
from langgraph_topics.settings import Settings
from langgraph_topics.state.records import StoredMessage

POLICY = CallPolicy(backoff=Backoff(retries=0, base_seconds=0.001), format_retries=1, language="en")
NEW_TOPIC = (
    "<topic_routing><matched_topics></matched_topics>"
    "<no_match_reason>bonsai is nowhere</no_match_reason><new_topic>yes</new_topic>"
    "</topic_routing>"
)
NO_MATCH = "<topic_routing><matched_topics></matched_topics></topic_routing>"


@pytest.fixture
def wire() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI()
    yield server
    server.close()


class StickySplitter:
    """The native splitter, until ``sticky`` is set: then every message goes to that topic.

    What a splitter may do with a new subject raised in the middle of an old one; the
    index window's verdict must overrule it.
    """

    def __init__(self, native: Splitter) -> None:
        self.native = native
        self.sticky: str | None = None

    def split(
        self, units: Sequence[Sequence[StoredMessage]], topics: Sequence[TopicInfo]
    ) -> SplitPlan:
        if self.sticky is None:
            return self.native.split(units, topics)
        ids = [m["id"] for unit in units for m in unit]
        return {
            "assignments": [{"message_ids": ids, "topic_id": self.sticky, "new_key": None}],
            "new_topics": [],
        }


def _llm_router(wire: FakeOpenAI, roles: Roles) -> LlmIndexRouter:
    model = ChatOpenAI(model="fake", base_url=wire.url, api_key="dummy", max_retries=0)  # type: ignore[call-arg]
    return LlmIndexRouter(model, roles.index_router, POLICY)


def test_candidates_follow_the_rank_quota() -> None:
    settings = Settings()
    # Few active → a large quota, twice as many candidates (capped); many → the old floor.
    assert activation_quota(3, settings, deep=False) == 7
    assert candidate_count(3, settings, deep=False) == 14
    assert candidate_count(0, settings, deep=False) == settings.max_active
    assert candidate_count(3, settings, deep=True) == 34
    assert candidate_count(0, settings, deep=True) == 2 * settings.max_active
    assert candidate_count(18, settings, deep=False) == settings.deep_search_k // 2
    assert candidate_count(18, settings, deep=True) == settings.deep_search_k
    counts = [candidate_count(n, settings, deep=False) for n in range(25)]
    assert counts == sorted(counts, reverse=True)  # more active, never more candidates


def test_the_verdict_is_new_only_when_nothing_matches() -> None:
    assert parse_index_routing(NEW_TOPIC, {"a"})["new_topic"] is True
    assert parse_index_routing(NO_MATCH, {"a"}) == {"topics": [], "new_topic": False}
    matched = NEW_TOPIC.replace(
        "<matched_topics>", '<matched_topics><topic id="a" relevance="high">x</topic>'
    )
    assert parse_index_routing(matched, {"a"})["new_topic"] is False
    # A recently active topic it continues: no new subject, and nothing to activate.
    continued = NEW_TOPIC.replace(
        "<matched_topics>", '<matched_topics><topic id="r" relevance="high">x</topic>'
    )
    assert parse_index_routing(continued, {"a"}, {"r"}) == {"topics": [], "new_topic": False}
    with pytest.raises(ReplyFormatError):
        parse_index_routing(NEW_TOPIC.replace(">yes<", ">maybe<"), {"a"})


def test_the_window_is_budgeted(make_memory: MemoryFactory, roles: Roles) -> None:
    memory = make_memory(budget=900, roles=roles)
    memory.import_messages("t", subject_records(["stocks", "kyoto", "sourdough", "fitness"]))
    state = memory.state("t")
    store = memory.services.stores("t").topic_store
    counter = memory.services.token_counter
    full = index_window(state["topics"], store, Settings(), counter)
    assert full["days"] and full["days"] == sorted(full["days"], reverse=True)
    tight = index_window(state["topics"], store, Settings(index_window_tokens=60), counter)
    shown = [f"{i['id']} {i['name']} {i['brief']}" for i in tight["recent"]]
    shown += [f"{d}: {'; '.join(n)}" for d, n in tight["days"]]
    assert sum(counter(text) for text in shown) <= 60
    assert index_window(state["topics"], store, Settings(index_window_tokens=0), counter) == {
        "recent": [],
        "days": [],
    }


def test_the_router_reads_recent_briefs_and_the_time_index_and_a_new_topic_is_split_apart(
    make_memory: MemoryFactory, roles: Roles, wire: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    verdicts = iter([NEW_TOPIC])
    wire.on("index_router", lambda request: Reply(next(verdicts, NO_MATCH)))
    sized: list[tuple[int, bool, int]] = []

    def spy(active_count: int, settings: Settings, *, deep: bool) -> int:
        sized.append((active_count, deep, candidate_count(active_count, settings, deep=deep)))
        return sized[-1][2]

    monkeypatch.setattr(activate_node, "candidate_count", spy)
    splitter = StickySplitter(roles.splitter)
    memory = make_memory(
        budget=900,
        roles=with_roles(roles, index_router=_llm_router(wire, roles), splitter=splitter),
        keep_recent=4,
        split_after_reply=False,
        wake_by_evidence=False,
    )
    memory.import_messages("t", subject_records(["stocks", "kyoto", "sourdough", "fitness"]))
    state = memory.state("t")
    topics = dict(state["topics"])
    store = memory.services.stores("t").topic_store
    kyoto_id = next(
        t for t in store.topic_ids() if any("ryokan" in m["content"] for m in store.messages(t))
    )
    kyoto = topics[kyoto_id]
    splitter.sticky = kyoto_id  # from now on the splitter attaches everything to Kyoto
    index = memory.services.stores("t").topic_index
    for topic_id in topics:
        status = "active" if topic_id == kyoto["id"] else "dormant"
        topics[topic_id] = {**topics[topic_id], "status": status}
        index.set_status(topic_id, status)
    memory.graph.update_state(
        {"configurable": {"thread_id": "t"}}, {"topics": topics}, as_node="bookkeeping"
    )
    before = set(topics)

    memory.chat("t", "You forgot? I told you before: how often should I water my bonsai tree?")

    [first, *_] = wire.of_role("index_router")
    recent = first.user.split("<recent_topics>")[1].split("</recent_topics>")[0]
    assert kyoto["id"] in recent and kyoto["name"] in recent
    days = first.user.split("<time_index>")[1].split("</time_index>")[0]
    assert '<day date="2024-03-1' in days and days.index("2024-03") < days.index("2024-01")
    candidates = first.user.split("<candidates>")[1].split("</candidates>")[0]
    assert kyoto["id"] not in candidates  # the active topic is not searched for again
    assert sized[0] == (1, True, candidate_count(1, memory.settings, deep=True))

    state = memory.state("t")
    [hinted] = state["new_topic_hints"]
    question = next(m for m in state["messages"] if m.id == hinted)
    assert "bonsai" in str(question.content)
    assert "new topic" in next(e for e in state["events"] if e["kind"] == "index_search")["detail"]

    for turn in range(8):  # until a split moves the hinted exchange (older than the last 4)
        memory.chat("t", f"Bonsai question {turn}: should the soil dry out between waterings?")
        if not memory.state("t").get("new_topic_hints"):
            break
    state = memory.state("t")
    assert not state.get("new_topic_hints")  # used once, by the split that moved it
    holder = store.locate(hinted)
    assert holder is not None and holder not in before
    held = [m["id"] for m in store.messages(holder)]
    assert held[0] == hinted and len(held) == 2  # the exchange, alone: the verdict overruled
    follow_ups = [m for m in store.messages(kyoto_id) if "Bonsai question" in m["content"]]
    assert follow_ups  # later exchanges went where the splitter sent them
    assert memory.check("t").ok


def test_a_native_router_gets_no_window_and_never_a_verdict(
    make_memory: MemoryFactory, roles: Roles, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[object] = []
    monkeypatch.setattr(activate_node, "index_window", lambda *a, **k: built.append(a))
    memory = make_memory(budget=900, roles=roles)
    memory.import_messages("t", subject_records(["stocks", "kyoto", "sourdough", "fitness"]))
    memory.chat("t", "You forgot? I told you before: how often should I water my bonsai tree?")
    assert not built
    assert not memory.state("t").get("new_topic_hints")
