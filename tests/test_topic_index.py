from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from langgraph_topics.stores import ChromaTopicIndex, InMemoryTopicIndex, TopicIndex, UseEmbedder

REPO = Path(__file__).resolve().parents[1]

TOPICS = {
    "topic-stocks": (
        "股票基本面",
        "讨论股票的基本面分析：市盈率、市净率、财报、估值方法和行业比较。",
    ),
    "topic-pasta": ("Cooking pasta", "Recipes for carbonara and tomato sauce, cooking times."),
    "topic-kyoto": ("Trip to Kyoto", "Travel plans: temples in Kyoto, rail passes, hotels."),
    "topic-python": ("Python typing", "Python programming: asyncio, type hints and mypy."),
}

IndexFactory = Callable[[Path], TopicIndex]


@pytest.fixture(scope="module")
def embedder() -> UseEmbedder:
    return UseEmbedder()


@pytest.fixture(params=["chroma", "memory"])
def make_index(request: pytest.FixtureRequest, embedder: UseEmbedder) -> IndexFactory:
    def factory(path: Path) -> TopicIndex:
        if request.param == "chroma":
            return ChromaTopicIndex(path, embedder)
        return InMemoryTopicIndex(embedder)

    return factory


def fill(index: TopicIndex, statuses: dict[str, str] | None = None) -> None:
    for topic_id, (name, brief) in TOPICS.items():
        index.upsert(topic_id, name, brief, status=(statuses or {}).get(topic_id, "active"))


def ids(hits: Sequence[tuple[str, float]]) -> list[str]:
    return [topic_id for topic_id, _ in hits]


def test_empty_index(make_index: IndexFactory, tmp_path: Path) -> None:
    index = make_index(tmp_path / "chroma")
    assert index.count() == 0
    assert index.search("anything", k=5) == []
    assert index.search("anything", k=5, exclude_status=()) == []
    index.remove("topic-missing")
    index.set_status("topic-missing", "archived")
    assert index.count() == 0


@pytest.mark.parametrize(
    ("query", "best"),
    [
        ("股市估值", "topic-stocks"),
        ("stock valuation", "topic-stocks"),
        ("how do I make spaghetti", "topic-pasta"),
        ("京都旅行", "topic-kyoto"),
        ("type hints in python code", "topic-python"),
    ],
)
def test_ranking(make_index: IndexFactory, tmp_path: Path, query: str, best: str) -> None:
    index = make_index(tmp_path / "chroma")
    fill(index)
    hits = index.search(query, k=10)  # k above the count is fine
    assert len(hits) == len(TOPICS)
    assert hits[0][0] == best
    scores = [score for _, score in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 <= score <= 1.0 for score in scores)
    assert hits[0][1] > 0.3
    assert len(index.search(query, k=2)) == 2
    assert index.search(query, k=0) == []


def test_status_filtering(make_index: IndexFactory, tmp_path: Path) -> None:
    index = make_index(tmp_path / "chroma")
    fill(index, {"topic-stocks": "archived", "topic-kyoto": "dormant"})
    assert "topic-stocks" not in ids(index.search("股市估值", k=10))
    assert "topic-kyoto" in ids(index.search("股市估值", k=10))
    assert ids(index.search("股市估值", k=1, exclude_status=()))[0] == "topic-stocks"
    found = ids(index.search("trip", k=10, exclude_status=("archived", "dormant")))
    assert set(found) == {"topic-pasta", "topic-python"}

    index.set_status("topic-stocks", "active")
    assert ids(index.search("股市估值", k=1)) == ["topic-stocks"]
    index.set_status("topic-pasta", "archived")
    index.set_status("topic-python", "archived")
    index.set_status("topic-kyoto", "archived")
    index.set_status("topic-stocks", "archived")
    assert index.search("股市估值", k=3) == []
    assert index.count() == len(TOPICS)


def test_upsert_replaces_and_remove(make_index: IndexFactory, tmp_path: Path) -> None:
    index = make_index(tmp_path / "chroma")
    fill(index)
    index.upsert("topic-pasta", "Japanese rail", "Shinkansen tickets and JR pass", status="active")
    assert index.count() == len(TOPICS)
    assert ids(index.search("JR pass for the bullet train", k=1)) == ["topic-pasta"]
    assert "topic-pasta" not in ids(index.search("carbonara recipe", k=1))
    index.remove("topic-pasta")
    assert index.count() == len(TOPICS) - 1
    assert "topic-pasta" not in ids(index.search("JR pass", k=10))


def test_backends_agree(embedder: UseEmbedder, tmp_path: Path) -> None:
    chroma = ChromaTopicIndex(tmp_path / "chroma", embedder)
    memory = InMemoryTopicIndex(embedder)
    fill(chroma)
    fill(memory)
    for query in ("股市估值", "pasta", "temples"):
        chroma_hits = chroma.search(query, k=4)
        memory_hits = memory.search(query, k=4)
        assert ids(chroma_hits) == ids(memory_hits)
        for (_, a), (_, b) in zip(chroma_hits, memory_hits, strict=True):
            assert a == pytest.approx(b, abs=1e-4)


def test_chroma_reopens_in_same_process(embedder: UseEmbedder, tmp_path: Path) -> None:
    first = ChromaTopicIndex(tmp_path / "chroma", embedder)
    fill(first, {"topic-kyoto": "archived"})
    second = ChromaTopicIndex(tmp_path / "chroma", embedder)
    assert second.count() == len(TOPICS)
    assert ids(second.search("股市估值", k=1)) == ["topic-stocks"]
    assert "topic-kyoto" not in ids(second.search("Kyoto", k=10))


def test_chroma_reopens_in_new_process(embedder: UseEmbedder, tmp_path: Path) -> None:
    path = tmp_path / "chroma"
    index = ChromaTopicIndex(path, embedder, collection="briefs-test")
    fill(index, {"topic-kyoto": "archived"})
    expected = index.search("股市估值", k=10)

    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from langgraph_topics.stores import ChromaTopicIndex, UseEmbedder\n"
        "index = ChromaTopicIndex(Path(sys.argv[1]), UseEmbedder(), collection='briefs-test')\n"
        "hits = index.search('股市估值', k=10)\n"
        "index.upsert('topic-new', 'Bonds', '债券收益率', status='active')\n"
        "print(json.dumps({'count': index.count(), 'hits': hits}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    completed = subprocess.run(
        [sys.executable, "-c", script, str(path)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert result["count"] == len(TOPICS) + 1
    assert ids(result["hits"]) == ids(expected)
    assert "topic-kyoto" not in ids(result["hits"])
    for (_, a), (_, b) in zip(result["hits"], expected, strict=True):
        assert a == pytest.approx(b, abs=1e-5)

    # And what the other process wrote is visible to a fresh client here.
    reopened = ChromaTopicIndex(path, embedder, collection="briefs-test")
    assert reopened.count() == len(TOPICS) + 1
