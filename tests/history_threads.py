"""Constructed threads for the history layer's tests: a decision that changes twice."""

from __future__ import annotations

from typing import Any

DATABASE_THREAD: list[tuple[str, str, str]] = [
    (
        "2024-03-01T10:00:00",
        "We need a database for the inventory app. We'll use Postgres for it.",
        "Postgres fits the inventory app well: transactions, constraints and JSON columns.",
    ),
    (
        "2024-03-01T10:05:00",
        "How should we back up the Postgres inventory database every night?",
        "Run pg_dump from a nightly cron job and keep a week of dumps off the machine.",
    ),
    (
        "2024-03-04T09:00:00",
        "My sourdough starter smells like acetone. Is it dead?",
        "It is hungry, not dead: feed it flour and water twice a day for a few days.",
    ),
    (
        "2024-03-04T09:05:00",
        "How often should I feed the sourdough starter if I keep it in the fridge?",
        "Once a week is enough in the fridge; take it out a day before baking.",
    ),
    (
        "2024-03-10T14:00:00",
        "Running Postgres on the tiny inventory server is painful. Let's switch to SQLite.",
        "SQLite keeps the inventory app in one file: nothing to run, and backups are a copy.",
    ),
    (
        "2024-03-14T18:00:00",
        "I'm planning a trip to Kyoto next April. Which neighbourhood is best to stay in?",
        "Stay near Gion or Higashiyama: walkable temples, old streets and good buses.",
    ),
    (
        "2024-03-14T18:05:00",
        "Is the Fushimi Inari shrine better early in the morning or at sunset?",
        "Go early in the morning, before 8, when the torii gates are nearly empty.",
    ),
    (
        "2024-03-20T11:00:00",
        "Three warehouses now write to the inventory app at once and SQLite locks up. "
        "We're going back to Postgres after all.",
        "Back to Postgres then: it handles concurrent writers, and the old backup job works.",
    ),
    (
        "2024-03-22T08:00:00",
        "What hydration should a beginner use for a sourdough country loaf?",
        "Start around 70 percent hydration; wetter doughs are harder to shape.",
    ),
    (
        "2024-03-22T08:05:00",
        "My sourdough loaf comes out dense and flat. Underproofed or overproofed?",
        "Dense and flat usually means underproofed: let the dough rise longer in a warm spot.",
    ),
    (
        "2024-03-25T19:00:00",
        "Which ryokan would you suggest near Gion for about 30,000 yen a night?",
        "Try Gion Hatanaka: a traditional ryokan with kaiseki dinner, near Yasaka shrine.",
    ),
    (
        "2024-03-25T19:05:00",
        "Should I buy a JR pass for day trips to Nara and Osaka from Kyoto?",
        "No, a regional Kansai pass or plain tickets are cheaper for those short trips.",
    ),
]
"""Postgres chosen, SQLite switched to, Postgres again, among sourdough and Kyoto talk."""


LEDGER_THREAD: list[tuple[str, str, str]] = [
    (
        "2024-05-01T10:00:00",
        "记账小程序需要一个数据库，我们决定用 MySQL。",
        "MySQL 很成熟，事务和索引都够用。",
    ),
    ("2024-05-03T10:00:00", "周末想去爬山，有什么推荐？", "可以去香山，秋天红叶很美。"),
    (
        "2024-05-08T10:00:00",
        "MySQL 部署在小服务器上太麻烦了，记账小程序改用 SQLite 吧。",
        "SQLite 只是一个文件，备份直接复制就行。",
    ),
    ("2024-05-12T10:00:00", "香山爬山要带什么装备？", "穿登山鞋，带水和防晒。"),
    (
        "2024-05-20T10:00:00",
        "多人同时记账时 SQLite 会锁表，记账小程序还是回到 MySQL。",
        "回到 MySQL 没问题，之前的索引设计还能用。",
    ),
    ("2024-05-22T10:00:00", "今天天气怎么样？", "晴天，适合出门。"),
]
"""The same decision in Chinese: MySQL chosen, SQLite switched to, back to MySQL."""


def thread_records(
    exchanges: list[tuple[str, str, str]], prefix: str = "d"
) -> list[dict[str, Any]]:
    """Import records of ``(time, question, answer)`` exchanges, ids ``d001``, ``d002``…"""
    records: list[dict[str, Any]] = []
    for stamp, question, answer in exchanges:
        for role, text in (("user", question), ("assistant", answer)):
            records.append(
                {
                    "id": f"{prefix}{len(records) + 1:03d}",
                    "role": role,
                    "content": text,
                    "timestamp": stamp if role == "user" else stamp[:-2] + "30",
                }
            )
    return records
