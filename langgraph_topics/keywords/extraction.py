"""Keyword extraction for Chinese and English text, following seed 003.

Chinese has no spaces, so instead of a word segmenter (a large dictionary dependency) a run of
Chinese characters is cut at stop words and particles, and every remaining run yields all of its
2-character pieces, plus the whole run when it is at most 4 characters long. The pieces give the
"weak association" of seed 003: 股票 in 股票估值 matches 股票 in 科技股票.

Latin words of at least 3 letters are lower-cased and lightly singularised; runs of digits of at
least 2 characters (years, amounts) are kept as they are.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from functools import lru_cache

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]+|[A-Za-z\u00c0-\u024f]+|\d+(?:\.\d+)?")
_CJK_RUN = re.compile(rf"[{_CJK}]+")
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]+")

CHINESE_STOP_WORDS: frozenset[str] = frozenset(
    """
    我们 你们 他们 她们 它们 咱们 大家 自己 人家 别人
    这个 那个 这些 那些 这样 那样 这里 那里 这么 那么 这种 那种 这儿 那儿 这次 那次
    什么 怎么 怎样 怎么样 为什么 为何 如何 哪些 哪个 哪里 哪儿 多少 几个 是否 是不是
    还是 或者 而且 但是 可是 不过 因为 所以 如果 虽然 然后 而是 只是 就是 不是 以及 并且
    可以 可能 能够 需要 应该 已经 还有 没有 一个 一些 一下 一点 有点 有些 一样 一直 一起
    现在 目前 最近 刚才 今天 之前 以前 之后 以后 时候 的话 其实 当然 确实 真的 非常 比较
    特别 关于 对于 问题 东西 事情 情况 方面 觉得 认为 知道 告诉 想要 希望 请问 谢谢 好的
    帮我 比如 例如 所有 大约 大概 左右 还要 其他 其中 总之 或许 也许 不错 感谢 麻烦 您好
    你好 哈哈 嗯嗯 好吧 会不会 能不能 要不要 可不可以 有没有
    不客气 客气 没事 没关系 明白 收到 辛苦 建议 开始 推荐 想学 想问 想知道 看看 试试 去看
    """.split()
)
"""Chinese function words removed from the keywords and used as cut points inside a run."""

_CHINESE_PARTICLES = "的了吗呢吧啊呀哦嘛是在有和与或但也都就还又很我你他她它您这那把被给让从而之其"
"""Single characters that almost never belong to a content word, so runs are cut at them.

The cost is a few lost words (和平, 存在, 首都, 有效, 还款); the gain is that 股票和债券
yields 股票 and 债券 instead of the junk pieces 票和 and 和债.
"""

ENGLISH_STOP_WORDS: frozenset[str] = frozenset(
    """
    the and for with that this these those have has had having from you your yours are was
    were what when where which who whom whose why how can could would should will shall may
    might must not but nor yet also just only than then there their theirs they them our ours
    out about above after again against all any both each few more most other some such own
    same very too into onto over under before below between through during off once here its
    his her hers him she himself herself itself myself yourself ourselves themselves does did
    doing done doesn didn don isn aren wasn weren hasn haven hadn won wouldn shouldn couldn
    cannot let get got gets getting make makes made tell told say said says know
    knew think thought want wanted like need needs please thanks thank okay yes yeah sure
    well now today still even really quite rather much many lot lots thing things something
    anything everything nothing someone anyone one two way ways because since while until
    upon via per whether either neither every ever never always often sometimes maybe
    perhaps etc use used using able want wants going gonna wanna kind sort bit hey hello
    welcome great cool nice awesome perfect sounds good fine bye got keyword
    """.split()
)
"""English function words and filler verbs removed from the keywords."""

_STOP_CUT = re.compile(
    "|".join(sorted(CHINESE_STOP_WORDS, key=len, reverse=True)) + f"|[{_CHINESE_PARTICLES}]"
)
_MAX_MERGED = 4
_MIN_STEM = 5
_PLURAL_EXCEPTIONS = frozenset({"news", "series", "species", "thanks", "lens", "chaos", "bias"})


def extract_keywords(text: str) -> list[str]:
    """Return the keywords of ``text``, each once, in order of first appearance.

    Args:
        text: Any mix of Chinese and Latin-script text.

    Returns:
        Chinese 2-character pieces (and whole runs of at most 4 characters), lower-cased Latin
        words of 3 or more letters, and digit runs of 2 or more characters, stop words removed.
    """
    return list(_keywords_of(text))


# About 0.7 KB an entry: 4,096 cover the topics a split touches; 8,192 still filled until turn
# ~3,700 of a long thread (2.2 new texts a turn), 65,536 grew with it throughout.
@lru_cache(maxsize=4096)
def _keywords_of(text: str) -> tuple[str, ...]:
    # Every split re-reads the messages of the topics it touches (names, briefs): the same
    # texts, again and again as a topic grows, so their keywords are remembered.
    seen: dict[str, None] = {}
    for group in keyword_groups(text):
        for keyword in group:
            seen.setdefault(keyword, None)
    return tuple(seen)


def keyword_groups(text: str) -> list[list[str]]:
    """Return the keywords of ``text`` grouped by the word or Chinese run they come from.

    A Latin word or a number is a group of one; a Chinese run (after the cuts at stop words)
    is a group of its pieces. Callers that ask "is this term known?" judge a run by its pieces
    as a whole, since a single piece such as 票估 in 股票估值 straddles two words.
    """
    groups: list[list[str]] = []
    for token in _TOKEN.findall(text):
        first = token[0]
        if _CJK_RUN.match(first):
            groups.extend(_chinese_groups(token))
        elif _LATIN.match(first):
            lowered = token.lower()
            if lowered in ENGLISH_STOP_WORDS:
                continue  # before folding: "always" is a stop word, "alway" would not be
            word = _singular(lowered)
            if len(word) >= 3 and word not in ENGLISH_STOP_WORDS:
                groups.append([word])
        elif len(token) >= 2:
            groups.append([token])
    return groups


def keyword_overlap(a: str | Collection[str], b: str | Collection[str]) -> float:
    """Overlap coefficient of two keyword sets: ``|A ∩ B| / min(|A|, |B|)``, in [0, 1].

    The overlap coefficient (not Jaccard) is used so that a short question whose keywords all
    occur in a long brief counts as a full match instead of being diluted by the brief's length.

    Args:
        a: A text (its keywords are extracted) or a collection of keywords.
        b: A text or a collection of keywords.

    Returns:
        0.0 when either side has no keywords.
    """
    left = _as_set(a)
    right = _as_set(b)
    if not left or not right:
        return 0.0
    return len(left & right) / min(len(left), len(right))


def shared_keywords(a: str | Collection[str], b: str | Collection[str]) -> list[str]:
    """Keywords of ``a`` that also occur in ``b``, in ``a``'s order."""
    right = _as_set(b)
    ordered = extract_keywords(a) if isinstance(a, str) else list(dict.fromkeys(a))
    return [keyword for keyword in ordered if keyword in right]


def missing_terms(text: str, known: str) -> list[str]:
    """Return the terms of ``text`` that ``known`` does not mention, in order.

    A term is one keyword group (see :func:`keyword_groups`), named by its first keyword. A
    Chinese run is mentioned when at least half of its 2-character pieces occur in ``known``
    (股票估值 is known from 股票 and 估值 said apart); a Latin word when its stem occurs (the word
    less up to three final letters, so "refinancing" is known from "refinance"); a number when
    it occurs.

    Args:
        text: The text whose terms are looked for (e.g. the user's question).
        known: The text they are looked for in (e.g. the whole context window).
    """
    haystack = known.lower()
    missing: list[str] = []
    for group in keyword_groups(text):
        if is_cjk(group[0]):
            pieces = [k for k in group if len(k) == 2]
            if 2 * sum(1 for piece in pieces if piece in haystack) < len(pieces):
                missing.append(group[0])
        elif _stem(group[0]) not in haystack:
            missing.append(group[0])
    return missing


def term_coverage(text: str, known: str) -> float:
    """Return the share of the terms of ``text`` that ``known`` mentions (0.0 without terms).

    Terms and mentions are those of :func:`missing_terms`; unlike :func:`keyword_overlap`, a
    Chinese run counts once whatever its number of pieces, so straddling pieces such as 票估
    in 股票估值 do not dilute the score.
    """
    total = len(keyword_groups(text))
    if total == 0:
        return 0.0
    return (total - len(missing_terms(text, known))) / total


def top_keywords(
    texts: Sequence[str], limit: int, *, weights: Sequence[float] | None = None
) -> list[str]:
    """Return the most characteristic keywords of several texts, best first.

    Keywords are ranked by weighted document frequency (how many texts contain them), then by
    length (a longer keyword is more specific), then by first appearance. A keyword contained in,
    or containing, a better-ranked one is skipped so that 红烧肉 is not followed by 红烧, and two
    Chinese pieces of one word are joined back (红烧 + 烧肉 → 红烧肉).

    Args:
        texts: The texts, e.g. one per message.
        limit: How many keywords to return at most.
        weights: One weight per text (default 1.0 each), e.g. to favour the user's messages.

    Returns:
        Up to ``limit`` keywords.
    """
    if weights is not None and len(weights) != len(texts):
        raise ValueError("weights must have one entry per text")
    score: dict[str, float] = {}
    first_seen: dict[str, int] = {}
    for index, text in enumerate(texts):
        weight = 1.0 if weights is None else weights[index]
        for keyword in extract_keywords(text):
            score[keyword] = score.get(keyword, 0.0) + weight
            first_seen.setdefault(keyword, len(first_seen))
    ranked = sorted(score, key=lambda k: (-score[k], first_seen[k]))
    chosen: list[str] = []
    for keyword in ranked:
        if len(chosen) >= limit:
            break
        if _joins_chosen(keyword, chosen, texts):
            continue
        if any(keyword in other or other in keyword for other in chosen):
            continue
        chosen.append(keyword)
    return chosen


def is_cjk(keyword: str) -> bool:
    """Whether a keyword is made of Chinese characters."""
    return bool(_CJK_RUN.fullmatch(keyword))


def chinese_runs(run: str) -> list[str]:
    """Return the parts of a Chinese run between stop words and particles, of 2 characters or more.

    This is seed 003's keyword candidate ("2 个及以上连续中文", stop words removed):
    ``我想系统学习股票基本面分析`` gives ``系统学习股票基本面分析``.
    """
    return [p for p in _STOP_CUT.split(run) if len(p) >= 2 and p not in CHINESE_STOP_WORDS]


def _chinese_groups(run: str) -> list[list[str]]:
    groups: list[list[str]] = []
    for part in _STOP_CUT.split(run):
        if len(part) < 2:
            continue
        keywords: list[str] = []
        if len(part) <= 4 and part not in CHINESE_STOP_WORDS:
            keywords.append(part)
        for start in range(len(part) - 1):
            piece = part[start : start + 2]
            if piece not in CHINESE_STOP_WORDS and piece != part:
                keywords.append(piece)
        if keywords:
            groups.append(keywords)
    return groups


def _joins_chosen(keyword: str, chosen: list[str], texts: Sequence[str]) -> bool:
    """Whether a Chinese piece continues a chosen one (红烧 then 烧肉); if so, join them in place.

    Such pieces come from one longer word, or straddle two words (做红 next to 红烧肉). The
    joined form replaces the chosen keyword when both pieces recur and it occurs about as often
    as they do; otherwise the piece is dropped, so either way it is not listed on its own.
    """
    if not is_cjk(keyword):
        return False
    for position, other in enumerate(chosen):
        if not is_cjk(other):
            continue
        for merged, joins in (
            (other + keyword[1:], other[-1] == keyword[0]),
            (keyword + other[1:], keyword[-1] == other[0]),
        ):
            if not joins:
                continue
            counts = (_document_frequency(other, texts), _document_frequency(keyword, texts))
            joined = _document_frequency(merged, texts)
            # One-off pieces are joined to nothing: a single occurrence cannot tell a word
            # (红烧肉) from two words side by side (先学 + 学基 + 基础).
            if len(merged) <= _MAX_MERGED and min(counts) >= 2 and joined >= 0.6 * max(counts):
                chosen[position] = merged
            return True
    return False


def _document_frequency(fragment: str, texts: Sequence[str]) -> int:
    return sum(1 for text in texts if fragment in text)


def _stem(word: str) -> str:
    if not _LATIN.fullmatch(word) or len(word) <= _MIN_STEM:
        return word
    return word[: max(_MIN_STEM, len(word) - 3)]


def _singular(word: str) -> str:
    # Only the regular plural forms: enough for "stocks" to meet "stock" without a stemmer.
    if word in _PLURAL_EXCEPTIONS or word.endswith(("ss", "us", "is", "ics")):
        return word
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s"):
        return word[:-1]
    return word


def _as_set(value: str | Collection[str]) -> set[str]:
    return set(extract_keywords(value)) if isinstance(value, str) else set(value)
