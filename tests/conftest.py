from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from langgraph_topics import Settings, TopicMemory
from langgraph_topics.roles.native import native_roles
from langgraph_topics.roles.protocols import Roles
from langgraph_topics.stores.embeddings import UseEmbedder

DATA = Path(__file__).parent / "data"

MemoryFactory = Callable[..., TopicMemory]


@pytest.fixture
def make_memory(tmp_path: Path) -> Iterator[MemoryFactory]:
    """Build TopicMemory instances on a fresh data directory; closes them afterwards."""
    made: list[TopicMemory] = []

    def factory(budget: int = 1500, roles: Roles | None = None, **settings: object) -> TopicMemory:
        memory = TopicMemory(
            settings=Settings(
                data_dir=tmp_path / f"memory{len(made)}", budget_tokens=budget, **settings
            ),  # type: ignore[arg-type]
            roles=roles,
        )
        made.append(memory)
        return memory

    yield factory
    for memory in made:
        memory.close()


@pytest.fixture(scope="session")
def embedder() -> UseEmbedder:
    return UseEmbedder()


@pytest.fixture
def roles(embedder: UseEmbedder) -> Roles:
    return native_roles(embedder)
