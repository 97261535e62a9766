"""Small scripted conversations in Chinese and English, one subject per block."""

from __future__ import annotations

from typing import Any

SUBJECTS: dict[str, list[tuple[str, str]]] = {
    "stocks": [
        (
            "我想系统学习股票基本面分析，应该从哪些财务指标开始？",
            "可以先看营业收入、净利润、毛利率和净资产收益率，再看现金流量表。",
        ),
        (
            "市盈率和市净率分别适合评估什么类型的公司？",
            "市盈率适合盈利稳定的公司，市净率适合银行、保险这类重资产公司。",
        ),
        (
            "经营现金流和自由现金流有什么区别？",
            "自由现金流等于经营现金流减去资本开支，代表公司真正可以自由支配的现金。",
        ),
        (
            "ROE 高的公司一定好吗？杜邦分析怎么拆？",
            "不一定，杜邦分析把 ROE 拆成净利率、资产周转率和权益乘数，要看高杠杆带来的风险。",
        ),
    ],
    "kyoto": [
        (
            "I'm planning a trip to Kyoto next April. Which neighbourhood is best to stay in?",
            "Stay near Gion or Higashiyama: walkable temples, old streets and good buses.",
        ),
        (
            "Is the Fushimi Inari shrine better early in the morning or at sunset?",
            "Go early in the morning, before 8, when the torii gates are nearly empty.",
        ),
        (
            "Should I buy a JR pass for day trips to Nara and Osaka?",
            "No, a regional Kansai pass or plain tickets are cheaper for those short trips.",
        ),
        (
            "What ryokan would you suggest near Gion for about 30,000 yen a night?",
            "Try Gion Hatanaka: a traditional ryokan with kaiseki dinner, near Yasaka shrine.",
        ),
    ],
    "sourdough": [
        (
            "My sourdough starter smells like acetone. Is it dead?",
            "It is hungry, not dead: feed it flour and water twice a day for a few days.",
        ),
        (
            "How often should I feed the starter if I keep it in the fridge?",
            "Once a week is enough in the fridge; take it out a day before baking.",
        ),
        (
            "My loaf comes out dense and flat. Underproofed or overproofed?",
            "Dense and flat usually means underproofed: let the dough rise longer in a warm spot.",
        ),
        (
            "What hydration should a beginner use for a country loaf?",
            "Start around 70 percent hydration; wetter doughs are harder to shape.",
        ),
    ],
    "fitness": [
        (
            "最近想开始健身，每周三次力量训练应该怎么安排？",
            "可以采用全身训练，每次做深蹲、卧推、划船三个复合动作。",
        ),
        ("深蹲和硬拉哪个更适合新手先练？", "新手先练高脚杯深蹲，动作稳定后再学习硬拉。"),
        ("蛋白质一天要吃多少克才够？", "一般每公斤体重 1.6 克蛋白质左右就足够支持增肌。"),
        ("练完之后肌肉酸痛还能继续练吗？", "轻微酸痛可以练其他部位，严重酸痛就休息一两天。"),
    ],
}


def subject_records(order: list[str], prefix: str = "m") -> list[dict[str, Any]]:
    """Import records of the given subjects, in order, with stable ids and timestamps."""
    records: list[dict[str, Any]] = []
    for block, subject in enumerate(order):
        for turn, (question, answer) in enumerate(SUBJECTS[subject]):
            n = len(records)
            stamp = f"2024-0{1 + block % 9}-1{turn}T10:00:0{turn}"
            records.append(
                {"id": f"{prefix}{n:03d}", "role": "user", "content": question, "timestamp": stamp}
            )
            records.append(
                {
                    "id": f"{prefix}{n + 1:03d}",
                    "role": "assistant",
                    "content": answer,
                    "timestamp": stamp,
                }
            )
    return records
