import inspect
import json
import math
import statistics
import time
from pathlib import Path

import pytest

from langgraph_topics.bench.baselines import (
    BM25,
    Bm25Sessions,
    Bm25Turns,
    EmbeddingTurns,
    FullHistory,
    Recency,
    RrfTurns,
    reciprocal_rank_fusion,
    tokenize,
    with_neighbours,
)
from langgraph_topics.bench.corpus import Turn, chars_over_four, locomo_turns, session_of
from langgraph_topics.bench.fakes import HashEmbedder
from langgraph_topics.bench.metrics import all_present, evidence_recall, summarise
from langgraph_topics.bench.packing import pack
from langgraph_topics.cli.main import main
from langgraph_topics.datasets import LocomoConversation, LocomoQuestion

CONV_26 = Path(__file__).parent / "data" / "locomo" / "conv-26.json"

TEXTS = [
    ("D1:1", "Ann", "Hi Bob, how was your week?"),
    ("D1:2", "Bob", "Busy! I adopted a greyhound called Pixel."),
    ("D1:3", "Ann", "A greyhound, lovely. I started pottery classes on Tuesdays."),
    ("D1:4", "Bob", "Pottery sounds relaxing."),
    ("D2:1", "Ann", "We booked the Kyoto trip for next April."),
    ("D2:2", "Bob", "Kyoto in April means cherry blossoms."),
    ("D2:3", "Ann", "My sister Lea is coming along."),
    ("D2:4", "Bob", "Say hi to Lea from me."),
]


def tiny_conversation() -> LocomoConversation:
    messages = [
        {
            "id": dia,
            "role": "user" if speaker == "Ann" else "assistant",
            "content": text,
            "name": speaker,
            "timestamp": f"2024-0{session_of(dia)}-01T10:00:0{index}",
        }
        for index, (dia, speaker, text) in enumerate(TEXTS)
    ]
    questions = [
        LocomoQuestion("What is the name of Bob's dog?", "Pixel", 4, ("D1:2",)),
        LocomoQuestion("When is the Kyoto trip?", "April", 2, ("D2:1", "D2:2")),
        LocomoQuestion("Who joins Ann in Kyoto?", "Lea", 1, ("D2:1", "D2:3")),
    ]
    return LocomoConversation("tiny", "Ann", "Bob", messages, questions)


def turns() -> list[Turn]:
    return locomo_turns(tiny_conversation())


def test_turns_carry_speaker_and_session() -> None:
    first = turns()[0]
    assert first == Turn("D1:1", 1, "Ann: Hi Bob, how was your week?")
    assert chars_over_four(first.text) == len(first.text) / 4


def test_bm25_matches_the_formula() -> None:
    documents = [tokenize("the dog runs"), tokenize("the cat"), tokenize("dog dog bird")]
    index = BM25(documents, k1=1.5, b=0.75)
    average = 8 / 3
    idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    expected = idf * 2 * 2.5 / (2 + 1.5 * (1 - 0.75 + 0.75 * 3 / average))
    assert index.scores(["dog"])[2] == pytest.approx(expected)
    assert index.scores(["dog"])[1] == 0.0
    assert index.order(["dog"]) == [2, 0, 1]
    assert index.order(["unknown"]) == [0, 1, 2]  # ties keep document order


def test_rrf_formula_and_ties() -> None:
    fused = reciprocal_rank_fusion([[0, 1, 2], [2, 1, 0]], k=60)
    # 1/61 + 1/63 > 2/62: the items each ranking puts first beat the one both put second.
    assert fused == [0, 2, 1]
    assert reciprocal_rank_fusion([[3], [4]]) == [3, 4]


def test_neighbours_stay_in_the_session() -> None:
    expanded = with_neighbours([3, 0], turns())
    assert expanded == [3, 2, 0, 1]  # turn 4 (index 4) opens session 2: not a neighbour of 3


def test_pack_skips_what_does_not_fit() -> None:
    assert pack([0, 1, 2], [5.0, 10.0, 3.0], 9.0) == ([0, 2], 8.0)
    assert pack([1, 1], [1.0, 1.0], 5.0) == ([1], 1.0)


def test_recall_metrics() -> None:
    assert evidence_recall(["a", "b"], {"a"}) == 0.5
    assert evidence_recall([], set()) == 1.0
    assert all_present(["a"], {"a", "b"}) and not all_present(["a", "c"], {"a"})
    rows = [{"recall": 1.0, "all_present": True, "tokens": 10.0}] * 2
    assert summarise(rows) == {"n": 2, "recall": 1.0, "all_present": 1.0, "tokens": 10.0}


def test_baselines_on_a_tiny_conversation() -> None:
    all_turns = turns()
    cost = chars_over_four
    budget = 15  # about one turn
    recency = Recency(all_turns, cost).select("anything", [7])[7]
    assert recency.ids == {"D2:4"}
    bm25 = Bm25Turns(all_turns, cost)
    assert bm25.select("name of Bob's dog greyhound", [budget])[budget].ids == {"D1:2"}
    sessions = Bm25Sessions(all_turns, cost).select("Kyoto April", [60])[60]
    assert sessions.ids == {"D2:1", "D2:2", "D2:3", "D2:4"}
    embedding = EmbeddingTurns(all_turns, cost, HashEmbedder())
    hybrid = RrfTurns(bm25, embedding, cost).select("pottery classes", [17])[17]
    assert hybrid.ids == {"D1:3"}  # 16 tokens: the next ones do not fit
    full = FullHistory(all_turns, cost).select("x", [1])[1]
    assert len(full.ids) == len(TEXTS)
    assert full.tokens == pytest.approx(sum(len(t.text) for t in all_turns) / 4)


def test_native_run_reports_recall_and_reasons(tmp_path: Path) -> None:
    from langgraph_topics.bench.native import run_native

    conversation = tiny_conversation()
    run = run_native(
        conversation,
        conversation.questions,
        budget=2000,
        token_estimate="chars4",
        work_dir=tmp_path / "native",
        embedder=HashEmbedder(),
    )
    assert len(run.rows) == 3
    # Eight turns stay unsplit inside the last twenty: everything is in the window.
    assert all(row["recall"] == 1.0 for row in run.rows)
    assert run.reasons["present"] == 5


def test_cli_bench_recall_baselines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    status = main(
        [
            "bench", "recall", str(CONV_26), "--budget", "1000,4000", "--limit", "4",
            "--no-native", "--out", str(out),
        ]
    )  # fmt: skip
    assert status == 0
    printed = capsys.readouterr().out
    assert "mean evidence recall" in printed and "BM25 turns" in printed
    report = json.loads((out / "recall.json").read_text("utf-8"))
    assert report["summary"]["full history"]["4000"]["all"]["recall"] == 1.0
    assert report["summary"]["BM25 turns"]["1000"]["all"]["n"] == 4
    forms = report["summary"]["BM25 turns"]["1000"]
    assert forms["dated"]["n"] + forms["undated"]["n"] == 4
    assert "by question form" in printed
    assert (out / "recall.png").stat().st_size > 1000


def test_a_question_naming_a_day_is_of_the_dated_form() -> None:
    from langgraph_topics.bench.recall import question_form

    assert question_form("在2月7号，你给我推荐了哪两部电影？") == "dated"
    assert question_form("What did Melanie do on 20 July 2023?") == "dated"
    assert question_form("我喜欢听什么类型的音乐？") == "undated"
    assert question_form("When did Caroline go to the support group?") == "undated"


def test_fanout_is_parallel() -> None:
    from langgraph_topics.bench.fanout import measure_fanout

    result = measure_fanout(6, 0.1, 2)
    # Speed-ups are the benchmark's to report; here only that the windows overlap at all.
    assert result["median_s"] < result["serial_s"]


def test_overhead_measures_both_graphs() -> None:
    from langgraph_topics.bench.overhead import measure_size, overhead_table

    size = measure_size(120, 4, 2)
    assert size["topic_graph"]["median_ms"] > 0 and size["plain_graph"]["median_ms"] > 0
    assert size["topic_graph"]["cpu_ms"] > 0 and size["floor_graph"]["cpu_ms"] > 0
    assert size["topic_graph"]["checkpoint_bytes_per_turn"] > 0
    assert size["state_floor_graph"]["cpu_ms"] > 0
    nodes = size["topic_graph"]["node_cpu_ms"]
    # Every chat turn runs these; the windows ran for the 4 active topics. The workflow
    # node's step is measured like any other (issue 37: it stays whatever it costs).
    every_turn = {"inject_workflow", "estimate", "recall_cue", "assemble", "respond"}
    assert every_turn | {"topic_window", "bookkeeping"} <= set(nodes), nodes
    assert all(ms > 0 for ms in nodes.values()), nodes
    table = overhead_table({"active_topics": 4, "budget_tokens": 8000, "sizes": [size]})
    assert "state ÷ floor" in table
    assert "where a topic-graph turn's CPU goes" in table and "outside the nodes" in table
    assert "outside ÷ the floor's turn" in table
    # Every turn scores the thread for its question, inside the assembler's own time.
    search = size["topic_graph"]["evidence_search_cpu_ms"]
    assert 0 < search <= nodes["assemble"], (search, nodes)
    assert "evidence search, inside the nodes" in table
    # Reopened in a process of its own.
    assert size["topic_graph"]["cold_start_seconds"] > size["topic_graph"]["open_seconds"] > 0
    # The breakdown's turns replayed from their recorded node outputs (none missing).
    assert size["topic_graph"]["replay_cpu_ms"] > 0
    assert "replayed updates ÷ the floor's turn" in table


def test_node_times_count_each_call_on_its_own_thread() -> None:
    import threading

    from langgraph_topics.graph.node_times import NodeTimes

    times = NodeTimes()

    def busy(state: dict[str, int], *, runtime: object = None) -> dict[str, int]:
        """A node."""
        deadline = time.thread_time() + 0.02
        while time.thread_time() < deadline:
            pass
        return {"n": state["n"] + 1}

    timed = times.wrap("busy", busy)
    assert timed.__name__ == "busy" and timed.__doc__ == "A node."
    assert list(inspect.signature(timed).parameters) == ["state", "runtime"]
    workers = [threading.Thread(target=timed, args=({"n": 0},)) for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    before = times.totals()
    assert timed({"n": 1}) == {"n": 2}
    # Four calls of at least 20 ms of their own thread's CPU each, wherever they ran.
    assert 4 * 0.02 <= times.seconds["busy"] < 4 * 0.02 + 0.5
    # A copy: a turn's share is the difference of two.
    assert times.totals()["busy"] - before["busy"] >= 0.02
    assert NodeTimes().totals() == {}


def test_the_compared_graphs_take_turns_in_a_rotating_order() -> None:
    from langgraph_topics.bench.overhead import _interleaved_turns

    ran: list[tuple[str, int]] = []
    timed = _interleaved_turns(
        {name: (lambda n, name=name: ran.append((name, n))) for name in "abc"}, 4
    )
    assert ran[:6] == [("a", 0), ("b", 0), ("c", 0), ("b", 1), ("c", 1), ("a", 1)]
    for turn in range(4):  # every graph's turn n before any graph's turn n + 1
        assert sorted(ran[3 * turn : 3 * turn + 3]) == [(name, turn) for name in "abc"]
    assert {name: len(wall) for name, (wall, cpu) in timed.items()} == {"a": 4, "b": 4, "c": 4}


def test_the_state_shaped_floor_has_the_topic_graphs_state_and_no_work(tmp_path: Path) -> None:
    from langgraph_topics.bench.floor import FloorThread
    from langgraph_topics.graph.builder import build_graph

    floor = FloorThread(
        tmp_path / "f.sqlite", topics=5, active=3, working=["a", "b"], state_shaped=True
    )
    assert set(floor.graph.channels) == set(build_graph().channels)
    floor.turn("one")
    floor.turn("two")
    values = floor.graph.get_state(floor.config).values
    assert [m.content for m in values["messages"]][-4:] == ["one", "Noted.", "two", "Noted."]
    assert len(values["topic_results"]) == 3  # one window per active topic, this turn's only
    assert values["turn"] == 2


def test_search_bench_reports_each_size(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    argv = ["bench", "search", "--history", "500,2000", "--thread-messages", "0"]
    assert main([*argv, "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "whole-thread evidence search" in printed and "2,000" in printed
    report = json.loads((tmp_path / "search.json").read_text("utf-8"))
    assert [r["messages"] for r in report["rows"]] == [500, 2000]
    assert all(r["median_ms"] > 0 and r["loop_ms"] > 0 for r in report["rows"])
    assert "thread" not in report


def test_search_bench_times_topic_memory_search_on_a_long_thread(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["bench", "search", "--history", "500", "--thread-messages", "400", "--queries", "6"]
    assert main([*argv, "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "TopicMemory.search on a 400-message thread" in printed and "20 ms target" in printed
    thread = json.loads((tmp_path / "search.json").read_text("utf-8"))["thread"]
    assert thread["messages"] == 400 and thread["queries"] == 6 and thread["target_ms"] == 20
    names = [row["name"] for row in thread["rows"]]
    assert names[0].startswith("search") and names[-1].startswith("BM25")
    assert all(0 < row["median_ms"] <= row["p90_ms"] <= row["max_ms"] for row in thread["rows"])
    assert thread["median_ms"] == thread["rows"][0]["median_ms"]


def test_embedders_bench_ranks_with_the_evidence_score(tmp_path: Path) -> None:
    from langgraph_topics.bench.embedders import run_embedders

    report = run_embedders(CONV_26, ["use"], [500, 100_000], "chars4", lambda line: None)
    [row] = report["rows"]
    assert row["recall"]["100000"] == 1.0 and 0.3 < row["recall"]["500"] < 1.0
    assert row["texts_per_second"] > 0


def test_node_outputs_play_back_what_each_call_returned() -> None:
    from langgraph_topics.bench.replay import NodeOutputs

    outputs = NodeOutputs()
    calls: list[dict[str, object]] = []

    def node(state: dict[str, object], *, runtime: object = None) -> dict[str, int]:
        """A node."""
        calls.append(state)
        return {"n": len(calls)}

    recorded = outputs.recorder().wrap("node", node)
    played = outputs.player().wrap("node", node)
    assert inspect.signature(played) == inspect.signature(node) and played.__doc__ == "A node."
    window = {"window_task": {"topic_id": "topic-a"}}
    assert [recorded({}), recorded({}), recorded(window)] == [{"n": 1}, {"n": 2}, {"n": 3}]
    outputs.turn = 1
    assert recorded({}) == {"n": 4}
    # Played back call by call (a node may run twice in a turn), a window by its topic.
    outputs.turn = 0
    assert [played(window), played({}), played({})] == [{"n": 3}, {"n": 1}, {"n": 2}]
    outputs.turn = 1
    assert played({}) == {"n": 4}
    assert len(calls) == 4  # a played node never runs
    with pytest.raises(KeyError, match="turn 1"):
        played({})


def test_search_bench_on_questions_finds_evidence_as_often_as_bm25(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    raw = json.loads(CONV_26.read_text("utf-8"))
    sample = raw[0] if isinstance(raw, list) else raw
    kept = {
        key: value
        for key, value in sample["conversation"].items()
        if not key.startswith("session_") or int(key.split("_")[1]) <= 3
    }
    data = tmp_path / "short.json"
    data.write_text(json.dumps([{**sample, "conversation": kept}]), "utf-8")
    argv = ["bench", "search", "--history", "500", "--data", str(data), "--budget", "1500"]
    argv += ["--thread-messages", "0"]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert "TopicMemory.search against BM25" in printed
    dev = json.loads((tmp_path / "out" / "search.json").read_text("utf-8"))["dev"]
    [row] = dev["rows"]
    assert row["conversation"] == "conv-26" and row["questions"] > 10
    assert dev["search_top10"] >= dev["bm25_top10"] > 0
    assert dev["median_ms"] > 0


def test_history_cost_bench_compares_the_import_with_the_layer_off_and_on(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["bench", "history-cost", str(CONV_26), "--messages", "60", "--repeats", "2"]
    assert main([*argv, "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "import of LoCoMo conv-26 (60 messages" in printed and "1.5× ceiling" in printed
    report = json.loads((tmp_path / "history-cost.json").read_text("utf-8"))
    off, on = report["runs"]["off"], report["runs"]["on"]
    assert len(off) == len(on) == 2
    assert all(r["history_s"] == 0 and r["themes"] == 0 for r in off)
    assert all(r["history_s"] > 0 and r["themes"] > 0 for r in on)
    assert all(r["total_s"] >= r["import_s"] > 0 for r in off + on)
    # The ratio of the unrounded medians (the rows show them rounded for the table).
    medians = [statistics.median(r["total_s"] for r in runs) for runs in (off, on)]
    assert report["ratio"] == pytest.approx(medians[1] / medians[0], rel=0.01)
    assert report["within_target"] == (report["ratio"] <= 1.5)
    assert report["cpu_ratio"] > 0 and "CPU time" in printed
    with pytest.raises(SystemExit, match="no conversation conv-99"):
        main(["bench", "history-cost", str(CONV_26), "--conversation", "conv-99"])
    with pytest.raises(SystemExit, match="no such data file"):
        main(["bench", "history-cost", str(tmp_path / "missing.json")])


def test_scope_bench_times_both_scopes_and_reads_at_most_the_cap(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["bench", "scope", "--threads", "1,3", "--rounds", "2", "--messages", "4"]
    argv += ["--scope-threads", "2", "--embedder", "hash", "--out", str(tmp_path)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "bench scope: one user" in printed and "ratio" in printed
    report = json.loads((tmp_path / "scope.json").read_text("utf-8"))
    assert [(r["others"], r["read"]) for r in report["rows"]] == [(1, 1), (3, 2)]
    for row in report["rows"]:
        assert row["thread_ms"] > 0 and row["user_ms"] > 0 and row["reading_ms"] > 0
        assert row["ratio"] == pytest.approx(row["user_ms"] / row["thread_ms"], abs=0.01)
    with pytest.raises(SystemExit, match="bench scope: --rounds must be at least 1"):
        main(["bench", "scope", "--rounds", "0"])


def test_scope_bench_on_the_simulated_models_adds_the_turn_reading_topics(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``--models sim``: a third turn (the topic window reading other threads' topics)."""
    argv = ["bench", "scope", "--models", "sim", "--threads", "1", "--rounds", "1"]
    argv += ["--messages", "4", "--embedder", "hash", "--out", str(tmp_path)]
    assert main(argv) == 0
    assert "sim back ends" in capsys.readouterr().out
    (row,) = json.loads((tmp_path / "scope.json").read_text("utf-8"))["rows"]
    assert row["topics_ms"] > 0 and row["user_ms"] > 0
    assert row["topics_ratio"] == pytest.approx(row["topics_ms"] / row["user_ms"], abs=0.01)
    # At 4 messages no thread has a topic yet: no turn kind calls the topic window.
    assert row["user_window_calls"] == row["topics_window_calls"] == 0
    with pytest.raises(SystemExit):
        main(["bench", "scope", "--models", "real"])
    assert "invalid choice: 'real'" in capsys.readouterr().err
