"""Lexical retrieval helpers."""

from langgraph_topics.retrieval.bm25 import BM25, tokenize

__all__ = ["BM25", "tokenize"]
