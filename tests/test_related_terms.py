"""Keyword navigation: related terms learned from the thread (issue 38 item 4)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from langgraph_topics.bench.fakes import HashEmbedder
from langgraph_topics.retrieval import related_terms
from langgraph_topics.retrieval.evidence import EvidenceScorer
from langgraph_topics.retrieval.lexical import lexical_terms
from langgraph_topics.retrieval.message_index import MessageIndex
from langgraph_topics.retrieval.related_terms import (
    EXPANSION_WEIGHT,
    RelatedTerms,
    query_expansion,
    related_words,
    surface_word,
)
from langgraph_topics.state.records import StoredMessage

AUTH = [
    "The auth flow should use a JWT for the login.",
    "Where do we keep the refresh token after login?",
    "Auth: the token goes in an httpOnly cookie, the JWT stays short-lived.",
    "We decided the login page asks for the password once, then auth is by token.",
    "Should the auth service sign the JWT itself?",
    "Logout clears the token and the refresh cookie.",
]
JWT_ONLY = "Rotate the JWT signing key every month."
OTHER = (
    "sourdough starter flour hydration oven loaf crumb garden tomato compost basil marathon "
    "pace tempo knee shoes guitar chord capo strings piano recital budget rent deposit"
).split()
ZH = [
    "认证流程用令牌，登录以后发一个令牌。",
    "登录页面只问一次密码，之后靠令牌认证。",
    "刷新令牌放在cookie里，登录状态保持一周。",
    "认证服务自己签发令牌吗？登录接口要限流。",
]
ZH_OTHER = ["今天烤了酸面包，面粉和水的比例是七比十。", "周末去跑步，配速五分半。"]


def thread(extra: list[str] | None = None, seed: int = 3) -> list[StoredMessage]:
    """Auth talk (English and Chinese) among messages of other subjects, a minute apart."""
    rng = random.Random(seed)
    texts: list[str] = []
    for round_ in range(4):
        texts += [" ".join(rng.sample(OTHER, 8)) for _ in range(24)]
        texts += AUTH if round_ % 2 == 0 else ZH
        texts += rng.sample(ZH_OTHER, 2)
    texts += extra or []
    return [
        {
            "id": f"m{i}",
            "role": "user" if i % 2 == 0 else "assistant",
            "content": text,
            "timestamp": f"2024-01-{1 + i // 40:02d}T10:{i % 40:02d}:00",
        }
        for i, text in enumerate(texts)
    ]


def indexed(messages: list[StoredMessage]) -> MessageIndex:
    index = MessageIndex(None, HashEmbedder())
    index.add(messages, ["t"] * len(messages))
    return index


def test_a_term_is_related_to_the_words_the_thread_uses_with_it() -> None:
    index = indexed(thread([JWT_ONLY]))
    expansion = query_expansion(index, "auth")
    assert set(expansion) <= {"jwt", "login", "token", "refresh", "cookie"}
    assert {"jwt", "token"} <= set(expansion)
    assert all(0 < weight <= EXPANSION_WEIGHT for weight in expansion.values())
    assert "auth" not in expansion  # the query's own terms are not added again
    chinese = query_expansion(index, "认证")
    assert {"令牌", "登录"} <= set(chinese)
    # Pieces of the same word are not relations ("证流" is half of 认证 and half of 流程),
    # nor seams at a particle ("的训" of 的训练), nor two overlapping pairs of one word.
    assert not any(set(term) & set("认证") for term in chinese)
    assert not any(set(term) & set("的了是在有和也都就还很我你他这那把被给") for term in chinese)
    pairs = list(chinese)
    assert not any(set(a) & set(b) for i, a in enumerate(pairs) for b in pairs[i + 1 :])
    # Words the thread uses about everything at once relate to nothing in particular.
    assert not set(query_expansion(index, "flour")) & {"auth", "jwt", "token", "login"}


def test_related_terms_lift_a_message_holding_none_of_the_querys_words() -> None:
    messages = thread([JWT_ONLY])
    index = indexed(messages)
    scorer = EvidenceScorer(index.embedder)
    plain = scorer.score(index, "auth", [])
    expanded = scorer.score(index, "auth", [], expansion=query_expansion(index, "auth"))
    jwt_only = messages[-1]["id"]
    assert expanded.relevance_of(jwt_only) > plain.relevance_of(jwt_only)
    assert expanded.rank_of(jwt_only) <= plain.rank_of(jwt_only)
    # Without related terms the scores are the same, bit for bit.
    again = EvidenceScorer(index.embedder).score(index, "auth", [], expansion={})
    assert np.array_equal(np.asarray(again.score), np.asarray(plain.score))


def test_the_model_is_kept_with_the_index_until_the_thread_grows() -> None:
    messages = thread()
    index = indexed(messages)
    first = related_terms.related_terms(index)
    assert related_terms.related_terms(index) is first  # no rebuild per query
    index.add(thread(seed=5)[:2], ["t"] * 2)  # ids already held: nothing new
    more = [{**m, "id": f"n{i}"} for i, m in enumerate(thread(seed=9))]
    index.add(more[:1], ["t"])
    assert related_terms.related_terms(index) is first  # one message: relations unchanged
    index.add(more[1:], ["t"] * (len(more) - 1))
    rebuilt = related_terms.related_terms(index)
    assert rebuilt is not first and rebuilt.documents == len(index)


def test_memory_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(related_terms, "MAX_DOCUMENTS", 50)
    monkeypatch.setattr(related_terms, "CACHED_TERMS", 3)
    index = indexed(thread())
    model = RelatedTerms.of(index)
    assert model.first == len(index) - 50 and model.documents == len(index)
    assert int(model.term_rows.max()) < 50 and len(model.row_starts) == 51
    vectors = index.vectors()
    for term in ["auth", "token", "login", "jwt", "令牌"]:
        model.related(term, vectors)
    assert len(model._cache) == 3


def test_terms_are_shown_as_the_thread_writes_them() -> None:
    assert surface_word("proces", ["The adoption process", "processes", "a process"]) == "process"
    assert surface_word("令牌", ["认证用令牌"]) == "令牌"
    assert surface_word("zzz", ["nothing here"]) == "zzz"
    assert lexical_terms("logins")[0] == "login"


class _Store:
    def __init__(self, messages: list[StoredMessage]) -> None:
        self.held = {m["id"]: m for m in messages}

    def get_messages(self, ids: list[str]) -> dict[str, StoredMessage]:
        return {i: self.held[i] for i in ids if i in self.held}


def test_related_words_for_people() -> None:
    messages = thread([JWT_ONLY])
    index = indexed(messages)
    words = related_words(index, _Store(messages), "auth")  # type: ignore[arg-type]
    assert {"jwt", "token"} <= set(words)
    assert related_words(index, _Store(messages), "   ") == []  # type: ignore[arg-type]


def test_a_large_index_scores_related_terms_on_its_candidates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from langgraph_topics.retrieval import message_index

    monkeypatch.setattr(message_index, "LARGE_INDEX", 100)  # the candidate route from 100 on
    messages = thread([JWT_ONLY])
    index = indexed(messages)
    assert index.snapshot().projection is not None
    scorer = EvidenceScorer(index.embedder)
    plain = scorer.score(index, "auth", [])
    expansion = query_expansion(index, "auth")
    expanded = scorer.score(index, "auth", [], expansion=expansion)
    assert expanded.candidates is not None
    jwt_only = messages[-1]["id"]
    assert expanded.relevance_of(jwt_only) > plain.relevance_of(jwt_only)
