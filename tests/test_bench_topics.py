import json
import random
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from langgraph_topics.bench.partitions import (
    UNSPLIT,
    block_sizes,
    blocks_spanned,
    evidence_spread,
    mean_spread,
    memory_partition,
    random_contiguous,
    random_scattered,
    session_partition,
    shape,
)
from langgraph_topics.bench.subjects import (
    load_memorybank_users,
    mentions,
    parse_hobbies,
    stem,
    subject_messages,
)
from langgraph_topics.cli.main import main

Draw = Callable[[Sequence[str], Sequence[int], random.Random], dict[str, str]]
CONV_26 = Path(__file__).parent / "data" / "locomo" / "conv-26.json"
IDS = [f"D{s}:{t}" for s in (1, 2, 3) for t in (1, 2, 3, 4)]


def test_spread_is_zero_when_the_evidence_shares_one_topic() -> None:
    partition = {m: "t1" for m in IDS}
    assert evidence_spread(["D1:1", "D2:3", "D3:4"], partition) == 0.0


def test_spread_is_one_when_each_evidence_turn_has_its_own_topic() -> None:
    partition = {m: m for m in IDS}
    assert evidence_spread(["D1:1", "D2:3", "D3:4"], partition) == 1.0


def test_spread_in_between_and_undefined_below_two_turns() -> None:
    partition = session_partition(IDS)
    # Three turns in two sessions: (2 - 1) / (3 - 1).
    assert evidence_spread(["D1:1", "D1:2", "D2:1"], partition) == 0.5
    assert evidence_spread(["D1:1"], partition) is None
    assert evidence_spread(["D1:1", "D1:1"], partition) is None  # one distinct turn
    assert evidence_spread(["D1:1", "D9:9"], partition) is None  # unknown turns are ignored
    assert mean_spread([["D1:1", "D2:1"], ["D1:1", "D1:2"], ["D3:1"]], partition) == 0.5


def test_memory_partition_puts_the_unsplit_tail_in_one_block() -> None:
    located = {m: "a" for m in IDS[:8]}
    partition = memory_partition(IDS, located)
    assert [partition[m] for m in IDS[8:]] == [UNSPLIT] * 4
    figures = shape(partition)
    assert (figures.messages, figures.topics, figures.unsplit, figures.largest) == (12, 1, 4, 8)
    assert figures.per_100 == pytest.approx(100 / 12)
    assert figures.largest_share == pytest.approx(8 / 12)


def test_shape_counts_one_message_topics() -> None:
    partition = {"D1:1": "a", "D1:2": "a", "D1:3": "b", "D1:4": "c", "D2:1": UNSPLIT}
    figures = shape(partition)
    assert (figures.topics, figures.single) == (3, 2)
    assert figures.single_share == pytest.approx(2 / 3)


@pytest.mark.parametrize("draw", [random_contiguous, random_scattered])
def test_random_baselines_keep_the_memorys_topic_sizes(draw: Draw) -> None:
    memory = {
        m: ("a" if i < 6 else "b" if i < 9 else "c" if i < 10 else UNSPLIT)
        for i, m in enumerate(IDS)
    }
    sizes = block_sizes(memory)
    assert sizes == [6, 3, 2, 1]  # the unsplit tail is a block of its own
    for seed in range(5):
        partition = draw(IDS, sizes, random.Random(seed))
        assert set(partition) == set(IDS)
        assert block_sizes(partition) == sizes
    same = draw(IDS, sizes, random.Random(7)), draw(IDS, sizes, random.Random(7))
    assert same[0] == same[1]


def test_contiguous_draws_are_runs_in_time_order() -> None:
    partition = random_contiguous(IDS, [5, 4, 3], random.Random(1))
    blocks = [partition[m] for m in IDS]
    runs = [b for i, b in enumerate(blocks) if i == 0 or blocks[i - 1] != b]
    assert len(runs) == len(set(runs)) == 3


def test_random_draws_refuse_sizes_that_do_not_partition() -> None:
    with pytest.raises(ValueError, match="do not partition"):
        random_contiguous(IDS, [5, 5], random.Random(0))


def test_light_stemmer_and_hobby_keys() -> None:
    assert stem("movies") == stem("movie")
    assert stem("hiking") == stem("hike")
    assert stem("running") == stem("run")
    assert stem("painting") == stem("painted") == stem("paints")
    assert stem("wine") != stem("winning")
    keys = [s.key for s in parse_hobbies("painting, playing the piano, working out, and tea")]
    assert keys == [("paint",), ("piano",), ("work", "out"), ("tea",)]
    chinese = parse_hobbies("绘画，弹钢琴，看电影")
    assert [s.key for s in chinese] == [("绘画",), ("钢琴",), ("电影",)]
    assert mentions(chinese[2], "昨天我去看了一部电影")
    assert mentions(parse_hobbies("watching art films")[0], "I love Art Films from Iran")
    assert not mentions(parse_hobbies("watching art films")[0], "art and films")


def _memorybank(tmp_path: Path) -> Path:
    root = tmp_path / "memorybank"
    (root / "en").mkdir(parents=True)
    history = {
        "2023-05-01": [
            {"query": "I painted a lake today.", "response": "Lovely painting!"},
            {"query": "Any tea to try?", "response": "Try oolong."},
        ],
        "2023-04-30": [{"query": "Hello, I like painting.", "response": "Nice to meet you."}],
        "2023-05-02": [{"query": "Good morning.", "response": "Morning!"}],
    }
    data = {
        " Ann ": {
            "name": "Ann",
            "meta_information": {"hobbies": "painting, tea"},
            "history": history,
        },
    }
    (root / "en" / "memory_bank_en.json").write_text(json.dumps(data), "utf-8")
    return root


def test_memorybank_users_and_recurring_subjects(tmp_path: Path) -> None:
    (user,) = load_memorybank_users(_memorybank(tmp_path))
    assert (user.conversation_id, user.name, user.language) == ("mb-en-01", "Ann", "en")
    ids = [m["id"] for m in user.messages]
    assert ids == ["D1:1", "D1:2", "D2:1", "D2:2", "D2:3", "D2:4", "D3:1", "D3:2"]
    assert user.messages[0]["content"] == "Hello, I like painting."  # days in date order
    assert [m["role"] for m in user.messages[:2]] == ["user", "assistant"]
    painting, tea = user.subjects
    assert subject_messages(user, painting) == (["D1:1", "D1:2", "D2:1", "D2:2"], 2)
    assert subject_messages(user, tea) == (["D2:3", "D2:4"], 1)
    painted, _ = subject_messages(user, painting)
    assert blocks_spanned(painted, session_partition(ids)) == 2


def test_memorybank_rejects_what_is_not_a_history(tmp_path: Path) -> None:
    bad = tmp_path / "memory_bank_en.json"
    bad.write_text("[]", "utf-8")
    with pytest.raises(SystemExit, match="expected an object keyed by user name"):
        load_memorybank_users(bad)
    with pytest.raises(SystemExit, match="no memory_bank"):
        load_memorybank_users(tmp_path / "nowhere")


def _short_locomo(tmp_path: Path, sessions: int) -> Path:
    """conv-26 cut to its first sessions (questions about later ones lose that evidence)."""
    raw = json.loads(CONV_26.read_text("utf-8"))
    sample = raw[0] if isinstance(raw, list) else raw
    conversation = {
        key: value
        for key, value in sample["conversation"].items()
        if not key.startswith("session_") or int(key.split("_")[1]) <= sessions
    }
    path = tmp_path / "short.json"
    path.write_text(json.dumps([{**sample, "conversation": conversation}]), "utf-8")
    return path


def test_cli_bench_topics_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    status = main(
        [
            "bench", "topics", str(_short_locomo(tmp_path, 4)), "--memorybank",
            str(_memorybank(tmp_path)), "--budget", "400,1500", "--draws", "3",
            "--json", "--out", str(out),
        ]
    )  # fmt: skip
    assert status == 0
    report = json.loads(capsys.readouterr().out)
    assert report == json.loads((out / "topics.json").read_text("utf-8"))
    assert (out / "topics.png").stat().st_size > 1000
    (entry,) = report["locomo"]["conversations"]
    assert entry["messages"] == 18 + 17 + 23 + 18
    for budget in ("400", "1500"):
        run = entry["budgets"][budget]
        assert sum(run["sizes"]) == entry["messages"]
        assert run["topics"] + (1 if run["unsplit"] else 0) == len(run["sizes"])
        spreads = run["spread"]
        assert len(spreads["topic memory"]) == len(spreads["random, contiguous runs"])
        assert all(0.0 <= v <= 1.0 for values in spreads.values() for v in values)
    assert report["locomo"]["summary"]["sessions"]["topics"] == 4
    bank = report["memorybank"]["summary"]["en"]
    assert (bank["users"], bank["subjects"], bank["one topic per day"]) == (1, 1, 2.0)
    assert 1.0 <= bank["400"]["topics_per_subject"]["topic memory"] <= 2.0


def test_cli_bench_topics_table_and_bad_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit, match="no such data file"):
        main(["bench", "topics", str(tmp_path / "missing.json")])
    with pytest.raises(SystemExit, match="no such MemoryBank"):
        main(["bench", "topics", str(CONV_26), "--memorybank", str(tmp_path / "nope")])
    status = main(
        [
            "bench", "topics", str(_short_locomo(tmp_path, 2)), "--budget", "300",
            "--draws", "2", "--out", str(tmp_path / "out"),
        ]
    )  # fmt: skip
    assert status == 0
    printed = capsys.readouterr().out
    assert "evidence spread" in printed and "one topic per session" in printed
    assert "MemoryBank" not in printed
