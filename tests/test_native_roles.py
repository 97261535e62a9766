from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import pytest

from langgraph_topics.roles.native import (
    NativeBriefWriter,
    NativeIndexRouter,
    NativeResponder,
    NativeSplitter,
    NativeTopicWindow,
    calibrate,
    native_roles,
)
from langgraph_topics.roles.native.text import truncate_utf8
from langgraph_topics.roles.native.vectors import Vector
from langgraph_topics.roles.protocols import TopicInfo
from langgraph_topics.state.records import AssembledContext, Role, StoredMessage
from langgraph_topics.state.units import group_units
from langgraph_topics.stores.embeddings import UseEmbedder


class CountingEmbedder:
    """Wraps the real embedder and records every call."""

    def __init__(self) -> None:
        self.inner = UseEmbedder()
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return self.inner.embed(texts)

    @property
    def texts(self) -> list[str]:
        return [text for call in self.calls for text in call]


def msg(id_: str, role: Role, content: str) -> StoredMessage:
    return {"id": id_, "role": role, "content": content}


def topic(id_: str, name: str, brief: str = "") -> TopicInfo:
    return {"id": id_, "name": name, "brief": brief, "status": "active", "file": f"{id_}.jsonl"}


def context(
    messages: list[StoredMessage],
    system_prompt: str = "",
    referenced: list[StoredMessage] | None = None,
) -> AssembledContext:
    referenced = referenced or []
    return {
        "messages": messages,
        "referenced_messages": referenced,
        "message_ids": [m["id"] for m in [*referenced, *messages]],
        "recent_ids": [m["id"] for m in messages],
        "system_prompt": system_prompt,
        "tokens": 0,
        "budget": 8000,
        "sections": {"system": 0, "topics": 0, "unsplit": 0, "recent": 0},
        "topic_ids": [],
        "trimmed": [],
    }


STOCKS = [
    msg("s1", "user", "最近美股的估值是不是太高了？"),
    msg("s2", "assistant", "标普500的市盈率现在大约是25倍，高于历史平均水平，科技股的估值尤其高。"),
    msg("s3", "user", "那科技股现在还值得买入吗？"),
    msg("s4", "assistant", "如果长期持有，可以分批买入科技股，注意控制仓位和估值风险。"),
]
COOKING = [
    msg("c1", "user", "How do I make braised pork belly?"),
    msg("c2", "assistant", "Brown the pork belly, then simmer it with soy sauce and sugar."),
    msg("c3", "user", "Can I use a pressure cooker instead?"),
    msg("c4", "assistant", "Yes, a pressure cooker cuts the simmering time to 25 minutes."),
]


@pytest.fixture(scope="module")
def embedder() -> UseEmbedder:
    return UseEmbedder()


# --- splitter -----------------------------------------------------------------------------


def test_splitter_separates_topics_keeps_units_and_assigns_every_id_once() -> None:
    counting = CountingEmbedder()
    units = group_units(STOCKS + COOKING)
    plan = NativeSplitter(counting).split(units, [])

    assigned = [i for a in plan["assignments"] for i in a["message_ids"]]
    assert sorted(assigned) == sorted(m["id"] for m in STOCKS + COOKING)
    target_of = {
        i: (a["topic_id"], a["new_key"]) for a in plan["assignments"] for i in a["message_ids"]
    }
    for unit in units:
        assert len({target_of[m["id"]] for m in unit}) == 1
    stock_targets = {target_of[m["id"]] for m in STOCKS}
    cooking_targets = {target_of[m["id"]] for m in COOKING}
    assert len(stock_targets) == 1 and len(cooking_targets) == 1
    assert stock_targets != cooking_targets
    assert len(counting.calls) == 1  # one batch for the whole split

    names = {t["key"]: t["name"] for t in plan["new_topics"]}
    assert "估值" in names[target_of["s1"][1] or ""]
    assert "pork" in names[target_of["c1"][1] or ""]
    for new_topic in plan["new_topics"]:
        assert new_topic["brief"].startswith("Keywords: ")
        assert len(new_topic["brief"].encode()) <= 1024


def test_splitter_routes_a_later_unit_to_a_matching_existing_topic(embedder: UseEmbedder) -> None:
    splitter = NativeSplitter(embedder)
    first = splitter.split(group_units(STOCKS + COOKING), [])
    briefs = {t["key"]: t for t in first["new_topics"]}
    key_of = {a["message_ids"][0]: a["new_key"] or "" for a in first["assignments"]}
    existing = [
        topic("T-stock", briefs[key_of["s1"]]["name"], briefs[key_of["s1"]]["brief"]),
        topic("T-cook", briefs[key_of["c1"]]["name"], briefs[key_of["c1"]]["brief"]),
    ]
    later = [
        msg("x1", "user", "科技股的市盈率这么高，会不会有泡沫？"),
        msg("x2", "assistant", "有一定泡沫风险，但盈利增长也很快。"),
        msg("y1", "user", "How long do I braise pork belly in the oven?"),
        msg("y2", "assistant", "About two hours at 160 degrees, covered, with the soy sauce."),
    ]
    plan = splitter.split(group_units(later), existing)
    target_of = {i: a["topic_id"] for a in plan["assignments"] for i in a["message_ids"]}
    assert target_of == {"x1": "T-stock", "x2": "T-stock", "y1": "T-cook", "y2": "T-cook"}
    assert plan["new_topics"] == []


def test_splitter_returns_to_a_topic_created_earlier_in_the_plan(embedder: UseEmbedder) -> None:
    back = [
        msg("b1", "user", "回到股票，科技股的估值现在还高吗？"),
        msg("b2", "assistant", "科技股市盈率仍在30倍左右，估值偏高。"),
    ]
    plan = NativeSplitter(embedder).split(group_units(STOCKS + COOKING + back), [])
    target_of = {i: a["new_key"] for a in plan["assignments"] for i in a["message_ids"]}
    assert target_of["b1"] == target_of["s1"] == target_of["b2"]
    assert len(plan["new_topics"]) == 2


def test_splitter_keeps_small_talk_with_the_preceding_run(embedder: UseEmbedder) -> None:
    thanks = [msg("t1", "user", "好的，谢谢"), msg("t2", "assistant", "不客气！")]
    plan = NativeSplitter(embedder).split(group_units(STOCKS + thanks), [])
    assert len(plan["new_topics"]) == 1
    assert plan["assignments"][0]["message_ids"] == ["s1", "s2", "s3", "s4", "t1", "t2"]


def test_splitter_assigns_repeated_ids_once_and_handles_no_units(embedder: UseEmbedder) -> None:
    splitter = NativeSplitter(embedder)
    assert splitter.split([], []) == {"assignments": [], "new_topics": []}
    plan = splitter.split([STOCKS[:2], STOCKS[1:]], [])
    assigned = [i for a in plan["assignments"] for i in a["message_ids"]]
    assert sorted(assigned) == ["s1", "s2", "s3", "s4"]


# --- brief writer --------------------------------------------------------------------------


def test_brief_fits_the_byte_budget_without_breaking_characters(embedder: UseEmbedder) -> None:
    roles: list[Role] = ["user", "assistant"]
    long_chinese = [
        msg(f"m{i}", roles[i % 2], f"第{i}段：股票估值与市盈率分析😀。" * 8) for i in range(30)
    ]
    for writer in (NativeBriefWriter(embedder), NativeBriefWriter(None, brief_bytes=300)):
        name, brief = writer.write(topic("T", ""), long_chinese)
        assert len(brief.encode("utf-8")) <= writer.brief_bytes
        assert "\ufffd" not in brief
        brief.encode("utf-8").decode("utf-8")  # round-trips: no broken character
        assert brief.startswith("Keywords: ")
        assert "估值" in brief and name


def test_brief_quotes_sentences_in_chronological_order(embedder: UseEmbedder) -> None:
    _, brief = NativeBriefWriter(embedder).write(topic("T", ""), STOCKS)
    lines = brief.splitlines()[1:]
    assert lines[0].startswith("- user: 最近美股")
    quoted = [
        next(i for i, m in enumerate(STOCKS) if line[2:].split(": ", 1)[1] in m["content"])
        for line in lines
    ]
    assert quoted == sorted(quoted)


def test_brief_writer_takes_whole_message_sentences_from_the_index() -> None:
    """A sentence that is a whole indexed message is not embedded again; the brief is the same."""
    counting = CountingEmbedder()
    fresh = NativeBriefWriter(counting).write(topic("T", ""), COOKING)
    asked: list[list[str]] = []

    def stored(message_ids: Sequence[str]) -> dict[str, Vector]:
        asked.append(list(message_ids))
        return {
            i: counting.inner.embed([m["content"]])[0]
            for m in COOKING
            for i in [m["id"]]
            if i in message_ids and i != "c2"
        }

    indexed = CountingEmbedder()
    writer = NativeBriefWriter(indexed)
    assert writer.write_with_vectors(topic("T", ""), COOKING, stored_vectors=stored) == fresh
    assert asked and set(asked[0]) == {"c1", "c2", "c3", "c4"}  # one sentence each
    assert indexed.texts == ["Brown the pork belly, then simmer it with soy sauce and sugar."]


def test_brief_writer_keeps_an_existing_name_and_derives_a_missing_one() -> None:
    writer = NativeBriefWriter()
    assert writer.write(topic("T", "美股投资"), STOCKS)[0] == "美股投资"
    name = writer.write(topic("T", "  "), COOKING)[0]
    assert "pork" in name.split()
    assert 1 <= len(name.split(" / ")) <= 4
    assert writer.write(topic("T", ""), [])[1] == ""


def test_truncate_utf8_never_cuts_inside_a_character() -> None:
    text = "估值😀a市盈率"
    for limit in range(len(text.encode()) + 2):
        cut = truncate_utf8(text, limit)
        assert len(cut.encode()) <= limit
        assert text.startswith(cut)


# --- topic window --------------------------------------------------------------------------


def test_calibration_maps_unrelated_low_and_related_high() -> None:
    assert calibrate(0.0) == 0.0 and calibrate(1.2) == 1.0
    assert calibrate(0.25) < 0.3 <= calibrate(0.35)
    assert calibrate(0.45) >= 0.5
    values = [calibrate(x / 100) for x in range(101)]
    assert values == sorted(values)


def test_topic_window_related_query_references_question_and_answer(
    embedder: UseEmbedder,
) -> None:
    window = NativeTopicWindow(embedder)
    stocks = topic("T-stock", "美股 / 估值 / 科技股")
    unsplit = [msg("u1", "user", "我们之前说的科技股估值问题，现在能买吗？")]
    verdict = window.evaluate(stocks, STOCKS, unsplit)
    assert verdict["relevance_score"] >= 0.5
    assert {"s3", "s4"} <= set(verdict["referenced_message_ids"])
    ids = verdict["referenced_message_ids"]
    assert ids[:2] == ["s3", "s4"]  # most relevant unit first, question with its answer
    assert verdict["summary"].startswith("话题「美股 / 估值 / 科技股」")
    assert "科技股" in verdict["summary"]

    english = window.evaluate(
        topic("T-cook", "pork / braising"),
        COOKING,
        [msg("u2", "user", "What spices go into braised pork?")],
    )
    assert english["relevance_score"] >= 0.5
    assert {"c1", "c2"} <= set(english["referenced_message_ids"])
    assert english["summary"].startswith("Relevant points from the earlier topic")


def test_topic_window_unrelated_query_scores_low_without_references(
    embedder: UseEmbedder,
) -> None:
    window = NativeTopicWindow(embedder)
    for text in ("明天北京天气怎么样？", "Recommend a good sci-fi novel to read."):
        verdict = window.evaluate(topic("T-stock", "美股 / 估值"), STOCKS, [msg("u", "user", text)])
        assert verdict["relevance_score"] < 0.3
        assert verdict["referenced_message_ids"] == [] and verdict["summary"] == ""
        cooking = window.evaluate(topic("T-cook", "pork"), COOKING, [msg("u", "user", text)])
        assert cooking["relevance_score"] < 0.3


def test_topic_window_weights_the_newest_user_message_most(embedder: UseEmbedder) -> None:
    window = NativeTopicWindow(embedder)
    unsplit = [
        msg("u1", "user", "How do I make braised pork belly?"),
        msg("u2", "assistant", "Simmer it with soy sauce."),
        msg("u3", "user", "换个话题：科技股的估值现在高吗？"),
    ]
    stocks = window.evaluate(topic("T-stock", "美股 / 估值"), STOCKS, unsplit)
    cooking = window.evaluate(topic("T-cook", "pork"), COOKING, unsplit)
    assert stocks["relevance_score"] > cooking["relevance_score"]


def test_topic_window_caches_message_embeddings() -> None:
    counting = CountingEmbedder()
    window = NativeTopicWindow(counting)
    stocks = topic("T-stock", "美股 / 估值")
    unsplit = [msg("u1", "user", "科技股估值高吗？")]
    window.evaluate(stocks, STOCKS, unsplit)
    assert all(m["content"] in counting.texts for m in STOCKS)
    counting.calls.clear()

    window.evaluate(stocks, STOCKS, unsplit)
    assert counting.calls == []  # same topic, same query: nothing embedded again

    grown = [*STOCKS, msg("s5", "user", "债券呢？")]
    window.evaluate(stocks, grown, [msg("u2", "user", "那债券的收益率呢？")])
    assert sorted(counting.texts) == sorted(["债券呢？", "那债券的收益率呢？"])


def test_topic_windows_run_in_parallel(embedder: UseEmbedder) -> None:
    window = NativeTopicWindow(embedder)
    unsplit = [msg("u1", "user", "科技股估值高吗？")]
    jobs = [(topic("T-stock", "美股 / 估值"), STOCKS), (topic("T-cook", "pork"), COOKING)] * 4
    sequential = [window.evaluate(t, m, unsplit) for t, m in jobs]
    with ThreadPoolExecutor(max_workers=8) as pool:
        parallel = list(pool.map(lambda job: window.evaluate(job[0], job[1], unsplit), jobs))
    assert parallel == sequential


def test_topic_window_without_a_brief_uses_its_messages(embedder: UseEmbedder) -> None:
    verdict = NativeTopicWindow(embedder).evaluate(
        topic("T", ""), STOCKS, [msg("u1", "user", "科技股的估值现在怎么样？")]
    )
    assert verdict["relevance_score"] >= 0.5


def test_topic_window_with_no_unsplit_messages_scores_zero(embedder: UseEmbedder) -> None:
    verdict = NativeTopicWindow(embedder).evaluate(topic("T", "x"), STOCKS, [])
    assert verdict == {"relevance_score": 0.0, "referenced_message_ids": [], "summary": ""}


def test_topic_window_caps_references(embedder: UseEmbedder) -> None:
    many = [
        msg(f"m{i}", "user" if i % 2 == 0 else "assistant", f"科技股估值第{i}点：市盈率偏高。")
        for i in range(20)
    ]
    verdict = NativeTopicWindow(embedder, max_references=4).evaluate(
        topic("T", "科技股估值"), many, [msg("u", "user", "科技股的估值和市盈率高吗？")]
    )
    assert 0 < len(verdict["referenced_message_ids"]) <= 4
    assert len(verdict["referenced_message_ids"]) % 2 == 0  # whole question-and-answer units


# --- index router --------------------------------------------------------------------------


def test_router_ranks_with_keyword_overlap_and_cuts_shallow_searches() -> None:
    router = NativeIndexRouter()
    candidates = [
        (topic("T-cook", "pork / braising", "Keywords: pork, sauce"), 0.40),
        (topic("T-stock", "股票 / 估值", "Keywords: 股票, 估值, 市盈率"), 0.35),
        (topic("T-travel", "japan / trip", "Keywords: japan, kyoto"), 0.10),
    ]
    routed = router.route("股票估值现在高吗", candidates, deep=False)
    assert [r["topic_id"] for r in routed] == ["T-stock", "T-cook"]
    assert routed[0]["relevance"] > 0.35
    assert "shared keywords: " in routed[0]["reason"] and "股票" in routed[0]["reason"]
    assert routed[1]["reason"] == "similarity 0.40, no shared keywords"
    assert all(0.0 <= r["relevance"] <= 1.0 for r in routed)

    deep = router.route("股票估值现在高吗", candidates, deep=True)
    assert [r["topic_id"] for r in deep] == ["T-stock", "T-cook", "T-travel"]


def test_router_never_lowers_the_index_similarity() -> None:
    routed = NativeIndexRouter().route(
        "tech stock valuations", [(topic("T", "股票 / 估值"), 0.62)], deep=False
    )
    assert routed[0]["relevance"] == pytest.approx(0.62)


# --- responder -----------------------------------------------------------------------------


def test_responder_quotes_overlapping_messages_in_a_chinese_frame() -> None:
    ctx = context([*STOCKS, msg("u1", "user", "科技股的估值现在怎么样？")])
    reply = NativeResponder().respond(ctx, can_activate=True)
    assert reply["text"].startswith("之前")
    assert "「标普500的市盈率现在大约是25倍" in reply["text"]
    assert "科技股的估值现在怎么样" not in reply["text"], "the question itself is no evidence"
    assert "s2" not in reply["text"], "ids are not words a person reads"
    assert reply["activate_query"] is None


def test_responder_quotes_referenced_topic_messages_with_their_answer() -> None:
    ctx = context([msg("u1", "user", "科技股的估值现在怎么样？")], referenced=STOCKS[2:])
    reply = NativeResponder().respond(ctx, can_activate=True)
    assert reply["text"] == (
        "之前你问过：「那科技股现在还值得买入吗？」"
        "我回答：「如果长期持有，可以分批买入科技股，注意控制仓位和估值风险。」"
    )
    assert reply["activate_query"] is None


def test_responder_quotes_in_an_english_frame() -> None:
    ctx = context([*COOKING, msg("u1", "user", "Remind me, which sauce goes on the pork belly?")])
    reply = NativeResponder(max_quotes=1).respond(ctx, can_activate=False)
    assert reply["text"] == (
        "Earlier I said: “Brown the pork belly, then simmer it with soy sauce and sugar.”"
    )


def test_responder_without_overlap_gives_a_neutral_reply() -> None:
    reply = NativeResponder().respond(
        context([*COOKING, msg("u1", "user", "Tell me about quantum entanglement")]),
        can_activate=False,
    )
    assert reply["text"] == "I don't have any earlier context on that yet. Could you tell me more?"
    assert reply["activate_query"] is None
    chinese = NativeResponder().respond(
        context([msg("u1", "user", "量子纠缠是什么")]), can_activate=False
    )
    assert chinese["text"].startswith("我们之前的对话里")


def test_responder_asks_for_activation_when_terms_are_missing() -> None:
    responder = NativeResponder()
    question = "What did we decide about the mortgage refinancing?"
    ctx = context([*COOKING, msg("u1", "user", question)])
    assert responder.respond(ctx, can_activate=True)["activate_query"] == question
    assert responder.respond(ctx, can_activate=False)["activate_query"] is None

    # Terms found in the window (here in the system prompt) need no activation.
    known = context(
        [msg("u1", "user", question)],
        system_prompt="## 话题：Mortgage\n[m1] user: Should we refinance the mortgage?",
    )
    assert responder.respond(known, can_activate=True)["activate_query"] is None

    # A Chinese term counts as known when most of its pieces are ("股票" and "估值" said apart).
    chinese = context([*STOCKS, msg("u1", "user", "股票估值")])
    assert responder.respond(chinese, can_activate=True)["activate_query"] is None


def test_responder_is_deterministic() -> None:
    ctx = context([*STOCKS, *COOKING, msg("u1", "user", "科技股估值和pork sauce")])
    replies = {NativeResponder().respond(ctx, can_activate=True)["text"] for _ in range(3)}
    assert len(replies) == 1


# --- assembly ------------------------------------------------------------------------------


def test_native_roles_builds_all_five(embedder: UseEmbedder) -> None:
    roles = native_roles(embedder)
    assert isinstance(roles.splitter, NativeSplitter)
    assert isinstance(roles.topic_window, NativeTopicWindow)
    assert isinstance(roles.brief_writer, NativeBriefWriter)
    assert isinstance(roles.index_router, NativeIndexRouter)
    assert isinstance(roles.responder, NativeResponder)


# --- splitter: continuity across splits, small talk, returns (issue 11) ----------------------


def test_splitter_continues_the_unit_the_previous_split_ended_on(embedder: UseEmbedder) -> None:
    kyoto = topic("T-kyoto", "Kyoto trip", "- user: I'm planning a trip to Kyoto next April.")
    kyoto["latest_unit"] = [
        msg("k1", "user", "I'm planning a trip to Kyoto next April. Where should I stay?"),
        msg("k2", "assistant", "Stay near Gion or Higashiyama, close to the old streets."),
    ]
    later = [
        msg("k3", "user", "Is the Fushimi Inari shrine better early in the morning?"),
        msg("k4", "assistant", "Go early, before the tour groups arrive at the shrine gates."),
    ]
    alone = NativeSplitter(embedder).split(group_units(later), [{**kyoto, "latest_unit": []}])
    carried = NativeSplitter(embedder).split(group_units(later), [kyoto])
    assert alone["new_topics"], "without the previous unit the shrine looks like a new subject"
    assert carried["new_topics"] == []
    assert carried["assignments"] == [
        {"message_ids": ["k3", "k4"], "topic_id": "T-kyoto", "new_key": None}
    ]


def test_a_goodbye_at_the_start_of_a_split_stays_with_the_subject_it_closes(
    embedder: UseEmbedder,
) -> None:
    stocks = topic("T-stock", "美股估值")
    stocks["latest_unit"] = STOCKS[2:]
    bye = [
        msg("g1", "user", "Great, thanks! Gotta run, talk later."),
        msg("g2", "assistant", "Bye!"),
    ]
    plan = NativeSplitter(embedder).split(group_units(bye + COOKING), [stocks])
    target_of = {
        i: a["topic_id"] or a["new_key"] for a in plan["assignments"] for i in a["message_ids"]
    }
    assert target_of["g1"] == target_of["g2"] == "T-stock"
    assert target_of["c1"] != "T-stock"


def test_small_talk_alone_never_opens_a_topic_when_there_is_one(embedder: UseEmbedder) -> None:
    thanks = [msg("t1", "user", "好的，谢谢"), msg("t2", "assistant", "不客气！")]
    plan = NativeSplitter(embedder).split(group_units(thanks), [topic("T-stock", "美股估值")])
    assert plan["new_topics"] == []
    assert plan["assignments"] == [
        {"message_ids": ["t1", "t2"], "topic_id": "T-stock", "new_key": None}
    ]


def test_a_canned_reply_does_not_glue_subjects_together(embedder: UseEmbedder) -> None:
    canned = "I don't have any earlier context on that yet. Could you tell me more?"
    messages = [
        msg("a1", "user", "How do I make braised pork belly?"),
        msg("a2", "assistant", canned),
        msg("b1", "user", "Which ryokan near Gion would you suggest for 30,000 yen a night?"),
        msg("b2", "assistant", canned),
    ]
    plan = NativeSplitter(embedder).split(group_units(messages), [])
    target_of = {i: a["new_key"] for a in plan["assignments"] for i in a["message_ids"]}
    assert target_of["a1"] != target_of["b1"]


def test_a_return_goes_back_to_its_dormant_topic(embedder: UseEmbedder) -> None:
    splitter = NativeSplitter(embedder)
    first = splitter.split(group_units(COOKING), [])
    (created,) = first["new_topics"]
    dormant = {**topic("T-cook", created["name"], created["brief"]), "status": "dormant"}
    back = [
        msg("r1", "user", "Back to the pork belly: can I braise it a day ahead?"),
        msg("r2", "assistant", "Yes, braised pork belly reheats well the next day."),
    ]
    plan = splitter.split(group_units(back), [topic("T-stock", "美股估值"), dormant])
    assert plan["assignments"] == [
        {"message_ids": ["r1", "r2"], "topic_id": "T-cook", "new_key": None}
    ]
