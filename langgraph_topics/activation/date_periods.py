"""Periods a message names ("March 2024", "2024-03", "last week", "去年3月", "上个月").

Read relative to a reference day (the message's own timestamp where the thread has one, else
the turn's clock), in English and Chinese. A month named without a year is the latest such
month not after the reference ("in March" said in February 2025 is March 2024); a period that
starts after the reference day is left out (a date query asks about the past).

A small grammar of its own rather than a general date parser: the installed
``python-dateutil`` reads one date from a whole string and its fuzzy mode takes any number for
a day, and ``dateparser``'s ``search_dates`` (not installed) finds dates in ordinary words
("a", "now") and reads no relative Chinese period; what a date query needs is the *period*
a phrase names, which neither returns.
"""

from __future__ import annotations

import re
from calendar import monthrange
from dataclasses import dataclass, replace
from datetime import date, timedelta

_MONTHS = {
    "january": 1,
    "february": 2,
    "march": 3,
    "april": 4,
    "may": 5,
    "june": 6,
    "july": 7,
    "august": 8,
    "september": 9,
    "october": 10,
    "november": 11,
    "december": 12,
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "sept": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}
_WEEKDAYS = {
    "monday": 0,
    "tuesday": 1,
    "wednesday": 2,
    "thursday": 3,
    "friday": 4,
    "saturday": 5,
    "sunday": 6,
}
_CHINESE_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_CHINESE_DIGITS = {
    "〇": 0,
    "零": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_ENGLISH_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_EARLIEST_YEAR = 1970
_LATEST_YEAR = 2199

_MONTH_WORD = "|".join(sorted(_MONTHS, key=len, reverse=True))
_WEEKDAY_WORD = "|".join(_WEEKDAYS)
_ORDINAL = r"(?:st|nd|rd|th)?"
_CN_NUMBER = r"[〇零一二两三四五六七八九十]{1,3}"
_CN_OR_DIGITS = rf"(?:\d{{1,2}}|{_CN_NUMBER})"

_ISO_DAY = re.compile(r"(?<![\d-])(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?![\d-])")
_ISO_MONTH = re.compile(r"(?<![\d-])(\d{4})[-/](\d{1,2})(?![\d/-])")
# "March 3rd, 2024", "last March", "March of 2024", "Mar 2024", "March".
_MONTH_FIRST = re.compile(
    rf"\b(?:(last|this|past|previous)\s+)?({_MONTH_WORD})\.?"
    rf"(?:\s+(\d{{1,2}}){_ORDINAL}\b)?"
    rf"(?:,?\s+(?:of\s+)?(\d{{4}}))?\b",
    re.IGNORECASE,
)
# "3 March 2024", "the 3rd of March".
_DAY_FIRST = re.compile(
    rf"\b(\d{{1,2}}){_ORDINAL}\s+(?:of\s+)?({_MONTH_WORD})\b\.?(?:,?\s+(\d{{4}}))?",
    re.IGNORECASE,
)
_RELATIVE = re.compile(
    r"\b(?:(last|this|past|previous)\s+(week|weekend|month|year)"
    r"|the\s+(week|month|year)\s+before\s+last"
    r"|(yesterday|today|tonight|this\s+morning|the\s+other\s+day|the\s+day\s+before\s+yesterday))\b",
    re.IGNORECASE,
)
_AGO = re.compile(
    r"\b(\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
    r"|a\s+few|a\s+couple\s+of|a\s+couple|few|several)\s+(day|week|month|year)s?\s+ago\b",
    re.IGNORECASE,
)
_WEEKDAY = re.compile(rf"\b(?:(last|on|this|past)\s+)({_WEEKDAY_WORD})\b", re.IGNORECASE)
_YEAR = re.compile(
    r"\b(?:in|during|from|since|of|back\s+in|around|throughout)\s+(\d{4})\b(?![-/]\d)",
    re.IGNORECASE,
)
_CHINESE_FULL = re.compile(
    rf"(\d{{4}}|[〇零一二三四五六七八九]{{4}})\s*年(?:\s*({_CN_OR_DIGITS})\s*月份?"
    rf"(?:\s*({_CN_OR_DIGITS})\s*[日号])?)?"
)
_CHINESE_MONTH = re.compile(
    rf"(去年|今年|前年)?\s*(?<![\d个])({_CN_OR_DIGITS})\s*月份?(?:\s*({_CN_OR_DIGITS})\s*[日号])?"
)
_CHINESE_RELATIVE = re.compile(
    r"(上上个月|上上月|上个月|上月|这个月|本月|这月"
    r"|上上周|上上个星期|上周|上个星期|上星期|上个礼拜|上礼拜|这周|本周|这个星期|这星期|这礼拜|这个礼拜"
    r"|大前天|前天|昨天|今天|前些天|前几天|最近几天"
    r"|去年|今年|前年)"
)
# Not "每周三次" (three times a week) nor "一周三天".
_CHINESE_WEEKDAY = re.compile(
    r"(?<![每一两几])(上|这|本)?(?:个)?(?:周|星期|礼拜)([一二三四五六日天])(?![次个天])"
)
_CHINESE_AGO = re.compile(
    rf"(\d{{1,3}}|{_CN_NUMBER}|几|半)\s*(天|个月|个星期|个礼拜|周|年)[之以]?前"
)


@dataclass(frozen=True)
class DatePeriod:
    """A span of days, both ends included, and the words that named it."""

    start: date
    end: date
    said: str
    yearless: bool = False
    """Named by its month (and day) without a year, nor a word placing it ("March 3", "3月3号";
    not "last March"): read as the latest such period not after the reference day, which a
    thread resting since an earlier year may not have lived (see :meth:`years_back`)."""

    def overlaps(self, first: date, last: date) -> bool:
        """Whether the days ``first``..``last`` (inclusive) share a day with this period."""
        return first <= self.end and last >= self.start

    def years_back(self, years: int) -> DatePeriod | None:
        """The same days ``years`` earlier (None where that is no date: February 29)."""
        year = self.start.year - years
        if not _valid_year(year):
            return None
        whole_month = (
            self.start.day == 1
            and (self.start.year, self.start.month) == (self.end.year, self.end.month)
            and self.end.day == monthrange(self.end.year, self.end.month)[1]
        )
        if whole_month:
            return replace(_month(year, self.start.month, self.said), yearless=self.yearless)
        try:
            start = self.start.replace(year=year)
            end = self.end.replace(year=self.end.year - years)
        except ValueError:
            return None
        return DatePeriod(start, end, self.said, self.yearless)


def _month(year: int, month: int, said: str) -> DatePeriod:
    return DatePeriod(date(year, month, 1), date(year, month, monthrange(year, month)[1]), said)


def _year(year: int, said: str) -> DatePeriod:
    return DatePeriod(date(year, 1, 1), date(year, 12, 31), said)


def _day(day: date, said: str) -> DatePeriod:
    return DatePeriod(day, day, said)


def _week_of(day: date, said: str) -> DatePeriod:
    monday = day - timedelta(days=day.weekday())
    return DatePeriod(monday, monday + timedelta(days=6), said)


def _months_back(today: date, months: int) -> tuple[int, int]:
    index = today.year * 12 + today.month - 1 - months
    return index // 12, index % 12 + 1


def _latest_month(today: date, month: int, *, strictly_before: bool) -> int:
    """The year of the latest ``month`` not after (or before) ``today``'s month."""
    if month < today.month or (month == today.month and not strictly_before):
        return today.year
    return today.year - 1


def _valid_year(year: int) -> bool:
    return _EARLIEST_YEAR <= year <= _LATEST_YEAR


def chinese_number(text: str) -> int | None:
    """A number written in digits or Chinese numerals up to 99 (``十二``, ``二十一``, ``两``)."""
    if text.isdigit():
        return int(text)
    if "十" in text:
        tens, _, ones = text.partition("十")
        if "十" in ones:
            return None
        high = _CHINESE_DIGITS.get(tens, -1) if tens else 1
        low = _CHINESE_DIGITS.get(ones, -1) if ones else 0
        return None if high < 1 or low < 0 else high * 10 + low
    if len(text) == 1:
        return _CHINESE_DIGITS.get(text)
    return None


def _chinese_year(text: str) -> int | None:
    if text.isdigit():
        return int(text)
    digits = [_CHINESE_DIGITS.get(character) for character in text]
    if any(digit is None for digit in digits):
        return None
    return int("".join(str(digit) for digit in digits))


def _dated(
    year: int, month: int, day_text: str | None, said: str, *, yearless: bool = False
) -> DatePeriod | None:
    """The month, or the one day of it when a day is named; None when it is no date."""
    if not _valid_year(year) or not 1 <= month <= 12:
        return None
    if day_text is None:
        return replace(_month(year, month, said), yearless=yearless)
    day = chinese_number(day_text)
    if day is None or not 1 <= day <= monthrange(year, month)[1]:
        return None
    return replace(_day(date(year, month, day), said), yearless=yearless)


def _english_count(text: str) -> tuple[int, int]:
    """The least and most a count means ("3": 3–3, "a few": 2–4)."""
    words = " ".join(text.lower().split())
    if words.isdigit():
        return int(words), int(words)
    if words in ("a few", "few", "several"):
        return 2, 4
    if words in ("a couple", "a couple of"):
        return 2, 2
    count = _ENGLISH_NUMBERS[words]
    return count, count


def _ago(today: date, least: int, most: int, unit: str, said: str) -> DatePeriod | None:
    """The period ``least``–``most`` ``unit``s before ``today`` (loosely: its whole unit)."""
    if unit == "day":
        return DatePeriod(today - timedelta(days=most), today - timedelta(days=least), said)
    if unit == "week":
        first = _week_of(today - timedelta(weeks=most), said)
        last = _week_of(today - timedelta(weeks=least), said)
        return DatePeriod(first.start, last.end, said)
    if unit == "month":
        if most > 12 * (today.year - _EARLIEST_YEAR):
            return None
        first = _month(*_months_back(today, most), said)
        last = _month(*_months_back(today, least), said)
        return DatePeriod(first.start, last.end, said)
    year = today.year - most
    if not _valid_year(year):
        return None
    return DatePeriod(date(year, 1, 1), date(today.year - least, 12, 31), said)


class _Spans:
    """The parts of a text already read as a date, so that a later pattern skips them."""

    def __init__(self) -> None:
        self.taken: list[tuple[int, int]] = []

    def claim(self, match: re.Match[str]) -> bool:
        """Take the match's span; False when it overlaps one taken before."""
        start, end = match.span()
        if any(start < e and end > s for s, e in self.taken):
            return False
        self.taken.append((start, end))
        return True


def _english(text: str, today: date) -> list[tuple[int, DatePeriod | None]]:
    found: list[tuple[int, DatePeriod | None]] = []
    free = _Spans().claim

    for match in _ISO_DAY.finditer(text):
        if free(match):
            year, month = int(match[1]), int(match[2])
            found.append((match.start(), _dated(year, month, match[3], match[0])))
    for match in _ISO_MONTH.finditer(text):
        if free(match):
            found.append((match.start(), _dated(int(match[1]), int(match[2]), None, match[0])))
    for match in _DAY_FIRST.finditer(text):
        if _is_month_word(text, match.start(2), match[2], dated=True) and free(match):
            month = _MONTHS[match[2].lower()]
            year = int(match[3]) if match[3] else _latest_month(today, month, strictly_before=False)
            period = _dated(year, month, match[1], match[0], yearless=not match[3])
            found.append((match.start(), period))
    for match in _MONTH_FIRST.finditer(text):
        dated = bool(match[1] or match[3] or match[4])
        if not _is_month_word(text, match.start(2), match[2], dated=dated) or not free(match):
            continue
        month = _MONTHS[match[2].lower()]
        if match[4]:
            year = int(match[4])
        else:
            year = _latest_month(today, month, strictly_before=match[1] is not None)
        yearless = not match[4] and match[1] is None
        found.append((match.start(), _dated(year, month, match[3], match[0], yearless=yearless)))
    for match in _RELATIVE.finditer(text):
        if free(match):
            found.append((match.start(), _english_relative(match, today)))
    for match in _AGO.finditer(text):
        if free(match):
            least, most = _english_count(match[1])
            found.append((match.start(), _ago(today, least, most, match[2].lower(), match[0])))
    for match in _WEEKDAY.finditer(text):
        if free(match):
            back = (today.weekday() - _WEEKDAYS[match[2].lower()] - 1) % 7 + 1
            found.append((match.start(), _day(today - timedelta(days=back), match[0])))
    for match in _YEAR.finditer(text):
        if free(match):
            year = int(match[1])
            found.append((match.start(), _year(year, match[0]) if _valid_year(year) else None))
    return found


_VERB_LIKE_MONTHS = frozenset({"may", "march"} | {word for word in _MONTHS if len(word) <= 4})
"""Month words that are ordinary words too ("may", "march", "jan", "dec"...)."""
_MONTH_PREPOSITIONS = frozenset(
    {"in", "of", "since", "during", "early", "late", "mid", "from", "until", "through", "by"}
)


def _is_month_word(text: str, start: int, word: str, *, dated: bool) -> bool:
    """Whether a month word is meant as a month: "may" and "march" are verbs too.

    Such a word is a month with a day or a year beside it (``dated``), after "in", "of",
    "since", "during", "last", "this"..., or capitalised where a sentence does not start
    ("May I ask..." is no month).
    """
    if word.lower() not in _VERB_LIKE_MONTHS or dated:
        return True
    before = text[:start].rstrip()
    previous = before.split()[-1].lower() if before.split() else ""
    if previous in _MONTH_PREPOSITIONS:
        return True
    sentence_start = not before or before[-1] in ".!?:;\"'(\n"
    return word[0].isupper() and not sentence_start


def _english_relative(match: re.Match[str], today: date) -> DatePeriod | None:
    said = match[0]
    if match[4]:
        word = " ".join(match[4].lower().split())
        if word in ("yesterday",):
            return _day(today - timedelta(days=1), said)
        if word == "the day before yesterday":
            return _day(today - timedelta(days=2), said)
        if word == "the other day":
            return DatePeriod(today - timedelta(days=10), today - timedelta(days=1), said)
        return _day(today, said)
    if match[3]:
        unit, back = match[3].lower(), 2
        which = "last"
    else:
        which, unit, back = match[1].lower(), match[2].lower(), 1
    if which == "past":
        span = {"week": 7, "weekend": 7, "month": 31, "year": 365}[unit]
        return DatePeriod(today - timedelta(days=span), today, said)
    if which == "this":
        back = 0
    if unit == "week":
        return _week_of(today - timedelta(weeks=back), said)
    if unit == "weekend":
        saturday = _week_of(today - timedelta(weeks=back), said).start + timedelta(days=5)
        if saturday > today:
            saturday -= timedelta(weeks=1)
        return DatePeriod(saturday, saturday + timedelta(days=1), said)
    if unit == "month":
        return _month(*_months_back(today, back), said)
    year = today.year - back
    return _year(year, said) if _valid_year(year) else None


def _chinese(text: str, today: date) -> list[tuple[int, DatePeriod | None]]:
    found: list[tuple[int, DatePeriod | None]] = []
    free = _Spans().claim

    for match in _CHINESE_FULL.finditer(text):
        if not free(match):
            continue
        year = _chinese_year(match[1])
        if year is None or not _valid_year(year):
            found.append((match.start(), None))
        elif match[2] is None:
            found.append((match.start(), _year(year, match[0])))
        else:
            month = chinese_number(match[2])
            period = _dated(year, month, match[3], match[0]) if month is not None else None
            found.append((match.start(), period))
    for match in _CHINESE_MONTH.finditer(text):
        if not free(match):
            continue
        month = chinese_number(match[2])
        if month is None or not 1 <= month <= 12:
            found.append((match.start(), None))
            continue
        relative = {"今年": 0, "去年": 1, "前年": 2}.get(match[1] or "")
        if relative is None:
            year = _latest_month(today, month, strictly_before=False)
        else:
            year = today.year - relative
        period = _dated(year, month, match[3], match[0], yearless=relative is None)
        found.append((match.start(), period))
    for match in _CHINESE_WEEKDAY.finditer(text):
        if free(match):
            weekday = _CHINESE_WEEKDAYS[match[2]]
            week = _week_of(today - timedelta(weeks=1 if match[1] == "上" else 0), match[0])
            day = week.start + timedelta(days=weekday)
            found.append((match.start(), _day(day, match[0])))
    for match in _CHINESE_RELATIVE.finditer(text):
        if free(match):
            found.append((match.start(), _chinese_relative(match[1], today)))
    for match in _CHINESE_AGO.finditer(text):
        if free(match):
            found.append((match.start(), _chinese_ago(match[1], match[2], today, match[0])))
    return found


def _chinese_ago(count: str, unit_word: str, today: date, said: str) -> DatePeriod | None:
    """``3天前``, ``几个月前``, ``半年前``: loosely, the whole unit ``count`` units back."""
    unit = {"天": "day", "个月": "month", "年": "year"}.get(unit_word, "week")
    if count == "半":
        # Half a month is about two weeks; half a year about six months.
        if unit == "month":
            return _ago(today, 12, 18, "day", said)
        return _ago(today, 5, 7, "month", said) if unit == "year" else None
    if count == "几":
        return _ago(today, 2, 4, unit, said)
    number = chinese_number(count)
    return _ago(today, number, number, unit, said) if number is not None else None


def _chinese_relative(word: str, today: date) -> DatePeriod | None:
    months = {"上上个月": 2, "上上月": 2, "上个月": 1, "上月": 1, "这个月": 0, "本月": 0, "这月": 0}
    if word in months:
        return _month(*_months_back(today, months[word]), word)
    weeks = {"上上周": 2, "上上个星期": 2, "上周": 1, "上个星期": 1, "上星期": 1, "上个礼拜": 1}
    weeks |= {"上礼拜": 1, "这周": 0, "本周": 0, "这个星期": 0, "这星期": 0, "这礼拜": 0}
    weeks |= {"这个礼拜": 0}
    if word in weeks:
        return _week_of(today - timedelta(weeks=weeks[word]), word)
    days = {"大前天": 3, "前天": 2, "昨天": 1, "今天": 0}
    if word in days:
        return _day(today - timedelta(days=days[word]), word)
    if word in ("前些天", "前几天", "最近几天"):
        return DatePeriod(today - timedelta(days=10), today - timedelta(days=1), word)
    year = today.year - {"去年": 1, "今年": 0, "前年": 2}[word]
    return _year(year, word) if _valid_year(year) else None


def find_periods(text: str, today: date) -> list[DatePeriod]:
    """The periods ``text`` names, in the order it names them, read relative to ``today``.

    A date that is no date ("February 30", "13月") and a period starting after ``today`` are
    left out, and a ``today`` outside 1970-2199 names none. Never raises on any text.
    """
    if not _valid_year(today.year):
        return []  # no conversation of this package's is dated then; "last week" may not exist
    found = _english(text, today) + _chinese(text, today)
    return [
        period
        for _, period in sorted(found, key=lambda pair: pair[0])
        if period is not None and period.start <= today
    ]
