"""Keyword extraction and overlap for Chinese and English text (seed 003)."""

from langgraph_topics.keywords.extraction import (
    CHINESE_STOP_WORDS,
    ENGLISH_STOP_WORDS,
    extract_keywords,
    is_cjk,
    keyword_groups,
    keyword_overlap,
    missing_terms,
    shared_keywords,
    term_coverage,
    top_keywords,
)

__all__ = [
    "CHINESE_STOP_WORDS",
    "ENGLISH_STOP_WORDS",
    "extract_keywords",
    "is_cjk",
    "keyword_groups",
    "keyword_overlap",
    "missing_terms",
    "shared_keywords",
    "term_coverage",
    "top_keywords",
]
