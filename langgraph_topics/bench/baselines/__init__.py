"""Retrieval baselines a user could assemble from common parts, packed into the same budgets.

Each baseline answers ``select(question, budgets)`` with the turns it would put in the window
at every budget; ranking happens once per question, packing once per budget.
"""

from langgraph_topics.bench.baselines.base import Baseline, RankedTurns, Selection
from langgraph_topics.bench.baselines.bm25 import BM25, Bm25Turns, tokenize
from langgraph_topics.bench.baselines.embedding import EmbeddingTurns
from langgraph_topics.bench.baselines.full import FullHistory
from langgraph_topics.bench.baselines.recency import Recency
from langgraph_topics.bench.baselines.rrf import RrfTurns, reciprocal_rank_fusion, with_neighbours
from langgraph_topics.bench.baselines.sessions import Bm25Sessions

__all__ = [
    "BM25",
    "Baseline",
    "Bm25Sessions",
    "Bm25Turns",
    "EmbeddingTurns",
    "FullHistory",
    "RankedTurns",
    "Recency",
    "RrfTurns",
    "Selection",
    "reciprocal_rank_fusion",
    "tokenize",
    "with_neighbours",
]
