"""The embedding cache embeds a text once even when parallel topic windows ask at once."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import numpy as np

from langgraph_topics.roles.native.vectors import VectorCache


class SlowCountingEmbedder:
    def __init__(self) -> None:
        self.texts: list[str] = []
        self.lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        time.sleep(0.2)
        with self.lock:
            self.texts.extend(texts)
        return [[float(len(t)), 1.0] for t in texts]


def test_parallel_misses_of_one_key_embed_once() -> None:
    embedder = SlowCountingEmbedder()
    cache = VectorCache(embedder)
    results: list[np.ndarray] = []
    barrier = threading.Barrier(6)

    def ask() -> None:
        barrier.wait()
        results.append(cache.embed([("query", "what did we decide about Kyoto?")]))

    threads = [threading.Thread(target=ask) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert embedder.texts == ["what did we decide about Kyoto?"]
    assert len(results) == 6 and all(np.array_equal(r, results[0]) for r in results)


def test_a_failing_embed_releases_the_waiters() -> None:
    class Failing:
        calls = 0

        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            Failing.calls += 1
            time.sleep(0.1)
            if Failing.calls == 1:
                raise RuntimeError("model crashed")
            return [[1.0, 0.0] for _ in texts]

    cache = VectorCache(Failing())
    outcomes: list[str] = []
    barrier = threading.Barrier(2)

    def ask() -> None:
        barrier.wait()
        try:
            cache.embed([("k", "text")])
            outcomes.append("ok")
        except RuntimeError:
            outcomes.append("failed")

    threads = [threading.Thread(target=ask) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=5)
    assert sorted(outcomes) == ["failed", "ok"]
