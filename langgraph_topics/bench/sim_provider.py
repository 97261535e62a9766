"""A simulated OpenAI-compatible chat-completions provider on 127.0.0.1 (``bench cost``).

Every role's request is answered in the prompt's own XML format, with relevance computed from
the prompt's own text (lexical overlap of the question with the topic's messages), after a
sleep given by a latency model, and with ``usage.prompt_tokens_details.cached_tokens`` given by
an OpenAI-style prefix-cache model. The server records every call (role, tier, tokens, start and
end) so the benchmark can charge each turn with what it really sent.

It is stdlib only (``http.server``) and threaded, so the parallel topic windows overlap as they
would on a real provider; sleeping keeps the simulated latency off the CPU.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from html import unescape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from langgraph_topics.tokens import TokenCounter, default_token_counter

ROLE_MARKERS = (
    ("<topic_result>", "topic_window"),
    ("<topic_split>", "splitter"),
    ("<topic_brief>", "brief_writer"),
    ("<topic_routing>", "index_router"),
)
"""The root element each role's system prompt asks for (en and zh prompts alike)."""

STRONG_MODEL = "sim-strong"
CHEAP_MODEL = "sim-cheap"
_CHUNK = 64
"""Characters per hashed block of the prefix cache (finer than the 128-token rounding)."""


@dataclass(frozen=True)
class Latency:
    """Seconds of one call: a fixed part, output at a rate, and a cost per input token."""

    base_s: float
    output_tokens_per_s: float
    ms_per_input_token: float

    def seconds(self, input_tokens: int, output_tokens: int) -> float:
        """The modelled duration of a call."""
        return (
            self.base_s
            + output_tokens / self.output_tokens_per_s
            + input_tokens * self.ms_per_input_token / 1000
        )


CHEAP_LATENCY = Latency(0.35, 150.0, 0.02)
STRONG_LATENCY = Latency(0.7, 60.0, 0.05)


@dataclass(frozen=True)
class CacheModel:
    """OpenAI-style automatic prefix caching.

    The longest prefix of the prompt seen before (for the same model) is a cache read, counted
    only from ``minimum`` tokens and then in whole ``block``-token steps.
    """

    minimum: int = 1024
    block: int = 128

    def cached(self, prefix_tokens: int) -> int:
        """The cache read reported for a repeated prefix of ``prefix_tokens``."""
        if prefix_tokens < self.minimum:
            return 0
        return self.minimum + (prefix_tokens - self.minimum) // self.block * self.block


@dataclass(frozen=True)
class SimConfig:
    """How the simulated provider behaves."""

    strong_model: str = STRONG_MODEL
    cheap_model: str = CHEAP_MODEL
    strong: Latency = STRONG_LATENCY
    cheap: Latency = CHEAP_LATENCY
    cache: CacheModel = field(default_factory=CacheModel)
    time_scale: float = 1.0
    """Multiplies every sleep (tests run at 0.01); reported latencies are the modelled ones."""


@dataclass
class CallRecord:
    """One request as the provider answered it."""

    role: str
    tier: str
    input_tokens: int
    cached_tokens: int
    """The automatic prefix cache's read (what the reply reports)."""
    explicit_cached_tokens: int
    """What a provider caching only at explicit ``cache_control`` breakpoints would read."""
    output_tokens: int
    started: float
    ended: float
    modelled_s: float
    score: float | None = None
    """A topic window's relevance score."""
    retry: bool = False
    """A role's request asked again after its reply was rejected (a bench bug if ever seen)."""

    def as_dict(self) -> dict[str, Any]:
        """The record as JSON-ready values."""
        return asdict(self)


class SimProvider:
    """The server. Use as a context manager; ``url`` is the ``/v1`` base URL."""

    def __init__(self, config: SimConfig | None = None, counter: TokenCounter | None = None):
        self.config = config or SimConfig()
        self.count = counter or default_token_counter()
        self.calls: list[CallRecord] = []
        self.rejections: list[tuple[str, str]] = []
        """Role and feedback of every format retry the package sent (its parser's verdict)."""
        self._seen: dict[str, set[int]] = {}
        self._lock = threading.Lock()
        self._inflight = 0
        provider = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # The reply's head and body are two writes: with Nagle's algorithm the body waits
            # for the client's delayed ACK, 40 ms a call that no provider's latency includes.
            disable_nagle_algorithm = True

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                payload = json.dumps(provider.answer(body)).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> SimProvider:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    @property
    def url(self) -> str:
        """The OpenAI base URL of the server."""
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def idle(self) -> bool:
        """No request is being answered."""
        with self._lock:
            return self._inflight == 0

    def tier_of(self, model: str) -> str:
        """``strong`` or ``cheap``, told by the model name in the request."""
        if model == self.config.strong_model:
            return "strong"
        if model == self.config.cheap_model:
            return "cheap"
        return "cheap" if re.search(r"mini|nano|cheap|haiku|flash|small", model) else "strong"

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """Build the reply to one request, sleep its modelled latency, and record it."""
        started = time.perf_counter()
        with self._lock:
            self._inflight += 1
        try:
            model = str(body.get("model", ""))
            tier = self.tier_of(model)
            messages = list(body.get("messages", []))
            system = _text(messages[0]) if messages and messages[0].get("role") == "system" else ""
            role = next((r for marker, r in ROLE_MARKERS if marker in system), "responder")
            prompt, breakpoint_chars = _serialise(body)
            input_tokens = self.count(prompt)
            repeated = self._remember(model, prompt)
            repeated_tokens = self.count(prompt[:repeated]) if repeated else 0
            cached = self.config.cache.cached(repeated_tokens)
            explicit = 0
            if breakpoint_chars:
                upto = min(repeated, breakpoint_chars)
                explicit = self.count(prompt[:upto]) if upto else 0
                explicit = explicit if explicit >= self.config.cache.minimum else 0
            retry = role != "responder" and any(m.get("role") == "assistant" for m in messages)
            if retry:
                self.rejections.append((role, _text(messages[-1])[:500]))
            text, score = reply_for(role, messages)
            output_tokens = max(1, self.count(text))
            latency = self.config.strong if tier == "strong" else self.config.cheap
            modelled = latency.seconds(input_tokens, output_tokens)
            time.sleep(
                max(0.0, modelled * self.config.time_scale - (time.perf_counter() - started))
            )
            record = CallRecord(
                role=role,
                tier=tier,
                input_tokens=input_tokens,
                cached_tokens=cached,
                explicit_cached_tokens=explicit,
                output_tokens=output_tokens,
                started=started,
                ended=time.perf_counter(),
                modelled_s=round(modelled, 4),
                score=score,
                retry=retry,
            )
            with self._lock:
                self.calls.append(record)
        finally:
            with self._lock:
                self._inflight -= 1
        return {
            "id": f"chatcmpl-sim-{len(self.calls)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": input_tokens,
                "completion_tokens": output_tokens,
                "total_tokens": input_tokens + output_tokens,
                "prompt_tokens_details": {"cached_tokens": cached},
            },
        }

    def _remember(self, model: str, prompt: str) -> int:
        """Characters of ``prompt`` already seen as a prefix (whole blocks), and remember it.

        Prefixes are kept as a chain of block hashes, as providers key their caches, so a
        lookup costs one pass over the prompt however many prompts were seen.
        """
        with self._lock:
            seen = self._seen.setdefault(model, set())
        chain = 0
        hashes: list[int] = []
        for start in range(0, len(prompt) - _CHUNK + 1, _CHUNK):
            chain = hash((chain, prompt[start : start + _CHUNK]))
            hashes.append(chain)
        with self._lock:
            matched = 0
            for number, value in enumerate(hashes):
                if value not in seen:
                    break
                matched = number + 1
            seen.update(hashes)
        return matched * _CHUNK


@contextmanager
def openai_endpoint(url: str) -> Iterator[None]:
    """Point the OpenAI client variables at ``url`` for the block, then restore them.

    This is the path a user takes (``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` with
    ``openai:<model>`` strings in the settings), so the bench measures exactly that path.
    """
    import os

    saved = {name: os.environ.get(name) for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY")}
    os.environ["OPENAI_BASE_URL"] = url
    os.environ["OPENAI_API_KEY"] = "sim-key"
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _text(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content)


def _serialise(body: dict[str, Any]) -> tuple[str, int]:
    """The prompt as one string in request order, and where its last cache breakpoint ends.

    Tools come first (providers put them ahead of the messages); a breakpoint marker on a
    content part or a message ends an explicit breakpoint (0: none in the request).
    """
    parts: list[str] = []
    if body.get("tools"):
        parts.append(json.dumps(body["tools"], sort_keys=True))
    size = sum(len(p) for p in parts)
    breakpoint_chars = 0
    for message in body.get("messages", []):
        head = f"<|{message.get('role', '')}|>"
        parts.append(head)
        size += len(head)
        content = message.get("content") or ""
        pieces = content if isinstance(content, list) else [{"text": str(content)}]
        for piece in pieces:
            text = str(piece.get("text", "")) if isinstance(piece, dict) else str(piece)
            parts.append(text)
            size += len(text)
            if isinstance(piece, dict) and _marks_breakpoint(piece):
                breakpoint_chars = size
        if _marks_breakpoint(message):
            breakpoint_chars = size
    return "".join(parts), breakpoint_chars


def _marks_breakpoint(part: dict[str, Any]) -> bool:
    """Anthropic's ``cache_control`` or OpenAI's ``prompt_cache_breakpoint`` on a part."""
    return bool(part.get("cache_control") or part.get("prompt_cache_breakpoint"))


# --- replies -------------------------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9']{3,}|[\u4e00-\u9fff]{2}")
_STOP = frozenset(
    "the and for you that was with have this what did when how are but not your about just "
    "she her his him they them their there been were from will would could should which who "
    "its it's i'm all any can had has our out one also like really yeah yes think know feel "
    "much very some more get got that's what's going doing".split()
)
_MESSAGE = re.compile(r'<message id="([^"]+)" role="(\w+)"[^>]*>(.*?)</message>', re.DOTALL)


def words(text: str) -> set[str]:
    """Content words of a text (Latin words of 3+ letters, CJK character pairs)."""
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def _section(text: str, tag: str) -> str:
    match = re.search(rf"<{tag}>(.*?)</{tag}>", text, re.DOTALL)
    return match.group(1) if match else ""


_NUMBERED = re.compile(r'<m n="(\d+)" role="(\w+)"[^>]*>(.*?)</m>', re.DOTALL)
"""A topic window's lean message markup: the model references the number."""


def _messages(block: str) -> list[tuple[str, str, str]]:
    """``(id or number, role, text)`` of each message element of a prompt block."""
    found = _MESSAGE.findall(block) or _NUMBERED.findall(block)
    return [(i, r, unescape(t)) for i, r, t in found]


def _user_input(messages: list[dict[str, Any]]) -> str:
    return "\n".join(_text(m) for m in messages if m.get("role") == "user")


def _coverage(question: set[str], text: set[str]) -> float:
    return len(question & text) / len(question) if question else 0.0


def reply_for(role: str, messages: list[dict[str, Any]]) -> tuple[str, float | None]:
    """The reply text for a role's request (and a topic window's score)."""
    handler: Callable[[list[dict[str, Any]]], tuple[str, float | None]] = _REPLIES.get(
        role, _responder
    )
    return handler(messages)


_SUMMARY_LIMIT = re.compile(r"at most about (\d+) characters|不超过 (\d+) 字")
SUMMARY_CHARS = 900
"""The longest summary the simulated cheap model writes (fewer when the prompt asks)."""


def _topic_window(messages: list[dict[str, Any]]) -> tuple[str, float | None]:
    """Score, then the references above 0.3; a summary and a card only when the prompt asks."""
    system = _text(messages[0]) if messages else ""
    given = _user_input(messages)
    unsplit = _messages(_section(given, "unsplit_messages"))
    split = _messages(_section(given, "split_messages"))
    question = next((words(t) for _, r, t in reversed(unsplit) if r == "user"), set())
    if split and question:
        # Words in most of the topic's messages (the speakers' names) say nothing about it.
        counts: dict[str, int] = {}
        bags = [words(t) for _, _, t in split]
        for bag in bags:
            for word in bag & question:
                counts[word] = counts.get(word, 0) + 1
        common = {w for w, n in counts.items() if n > max(3, len(split) * 0.3)}
        asked = question - common
        ranked = sorted(
            ((_coverage(asked, bag), i) for i, bag in enumerate(bags)), key=lambda p: -p[0]
        )
    else:
        ranked = []
    best = ranked[0][0] if ranked else 0.0
    score = round(min(0.95, 0.05 + 0.9 * best), 2)
    if score < 0.3:
        return (
            f"<topic_result>\n<relevance_score>{score}</relevance_score>\n</topic_result>",
            score,
        )
    chosen = [split[i] for value, i in ranked[:5] if value >= best * 0.5 and value > 0]
    ids = [i for i, _, _ in chosen]
    text = (
        f"<topic_result>\n<relevance_score>{score}</relevance_score>\n<referenced_messages>\n"
        + "\n".join(ids)
        + "\n</referenced_messages>\n"
    )
    if "<summary>" in system:
        asked_limit = _SUMMARY_LIMIT.search(system)
        limit = (
            min(SUMMARY_CHARS, int(next(filter(None, asked_limit.groups()))))
            if asked_limit
            else SUMMARY_CHARS
        )
        summary = " ".join(" ".join(t.split()[:40]) for _, _, t in chosen[:3])[:limit]
        text += f"<summary>{_escape(summary)}</summary>\n"
        if "<card>" in system:
            card = {
                "topics": [{"name": "what the question asks about", "message_ids": ids[:2]}],
                "decisions": [],
                "unresolved": [],
                "entities": [
                    {"name": w, "kind": "entity", "message_ids": ids[:1]}
                    for w in sorted(question & words(chosen[0][2]))[:3]
                ],
            }
            text += f"<card>{_escape(json.dumps(card))}</card>\n"
    return text + "</topic_result>", score


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_TOPIC = re.compile(
    r'<topic id="([^"]+)"(?: status="([^"]*)")?[^>]*><name>(.*?)</name><brief>(.*?)</brief>',
    re.DOTALL,
)


def _name_of(bag: list[str]) -> str:
    counts: dict[str, int] = {}
    for word in bag:
        if word.isalpha() and len(word) > 3:
            counts[word] = counts.get(word, 0) + 1
    top = sorted(counts, key=lambda w: (-counts[w], w))[:3]
    return " ".join(top).title() or "Conversation"


def _splitter(messages: list[dict[str, Any]]) -> tuple[str, float | None]:
    """Each exchange to the topic whose name and brief its words overlap most, else a new one.

    The reply takes the form the prompt asks for: runs of exchanges (``exchanges="1-3"``)
    when the prompt shows that attribute, else one assignment per message (``msg_id``).
    """
    system = _text(messages[0]) if messages else ""
    given = _user_input(messages)
    topics = [
        (topic_id, status or "active", words(unescape(name + " " + brief)))
        for topic_id, status, name, brief in _TOPIC.findall(_section(given, "topics"))
    ]
    created: dict[str, set[str]] = {}
    # Per exchange: its number, its message ids, the destination's attributes, a new brief.
    decided: list[tuple[str, list[str], str, str]] = []
    for number, exchange in re.findall(
        r'<exchange(?: n="(\d+)")?[^>]*>(.*?)</exchange>', given, re.DOTALL
    ):
        found = _messages(exchange)
        bag = set().union(*(words(t) for _, _, t in found)) if found else set()
        options = [(_coverage(bag, w), "old", i, st) for i, st, w in topics]
        options += [(_coverage(bag, w), "new", n, "") for n, w in created.items()]
        best = max(options, default=(0.0, "", "", ""))
        brief = ""
        if best[0] >= 0.25 and best[1] == "old":
            kind = "existing_active" if best[3] == "active" else "existing_inactive"
            target = f'topic="{kind}" topic_id="{best[2]}"'
        elif best[0] >= 0.25:
            target = f'topic="new" topic_name="{best[2]}"'
        else:
            name = _name_of([w for _, _, t in found for w in _WORD.findall(t.lower())])
            name = name if name not in created else f"{name} {len(created)}"
            created[name] = bag
            target = f'topic="new" topic_name="{name}"'
            brief = " ".join(found[0][2].split()[:30]) if found else name
        decided.append((number, [i for i, _, _ in found], target, brief))
    lines: list[str] = []
    if 'exchanges="' in system:
        runs: list[tuple[list[str], str, str]] = []
        for number, _, target, brief in decided:
            if runs and runs[-1][1] == target and not brief:
                runs[-1][0].append(number)
            else:
                runs.append(([number], target, brief))
        for numbers, target, brief in runs:
            span = numbers[0] if len(numbers) == 1 else f"{numbers[0]}-{numbers[-1]}"
            if brief:
                lines.append(
                    f'<assignment exchanges="{span}" {target}>'
                    f"<summary>{_escape(brief)}</summary></assignment>"
                )
            else:
                lines.append(f'<assignment exchanges="{span}" {target}/>')
    else:
        for _, ids, target, brief in decided:
            for place, message_id in enumerate(ids):
                inner = f"<summary>{_escape(brief)}</summary>" if brief and place == 0 else ""
                lines.append(
                    f'<assignment msg_id="{message_id}" {target}>{inner}same subject</assignment>'
                )
    return "<topic_split>\n" + "\n".join(lines) + "\n</topic_split>", None


def _brief_writer(messages: list[dict[str, Any]]) -> tuple[str, float | None]:
    given = _user_input(messages)
    shown = _messages(_section(given, "messages"))
    name = unescape(_section(given, "name")).strip() or _name_of(
        [w for _, _, t in shown for w in _WORD.findall(t.lower())]
    )
    sentences: list[str] = []
    for _, _, text in shown[-8:]:
        sentence = " ".join(text.split()[:24])
        if sentence and sentence not in sentences:
            sentences.append(sentence)
    brief = " ".join(sentences)[:1000] or name
    ids = [i for i, _, _ in shown[-2:]]
    card = {
        "topics": [{"name": name, "message_ids": ids}],
        "decisions": [],
        "unresolved": [],
        "entities": [],
    }
    return (
        f"<topic_brief>\n<name>{_escape(name)}</name>\n<brief>{_escape(brief)}</brief>\n"
        f"<card>{_escape(json.dumps(card))}</card>\n</topic_brief>",
        None,
    )


def _index_router(messages: list[dict[str, Any]]) -> tuple[str, float | None]:
    given = _user_input(messages)
    query = words(unescape(_section(given, "conversation")))
    matched = []
    for topic_id, _, name, brief in _TOPIC.findall(_section(given, "candidates")):
        value = _coverage(query, words(unescape(name + " " + brief)))
        if value >= 0.3:
            level = "high" if value >= 0.6 else "medium" if value >= 0.45 else "low"
            matched.append(
                (value, f'<topic id="{topic_id}" relevance="{level}">shared words</topic>')
            )
    matched.sort(key=lambda p: -p[0])
    body = "".join(t for _, t in matched[:3])
    reason = (
        ""
        if body
        else "<no_match_reason>no candidate shares the question's words</no_match_reason>"
    )
    return f"<topic_routing><matched_topics>{body}</matched_topics>{reason}</topic_routing>", None


def _responder(messages: list[dict[str, Any]]) -> tuple[str, float | None]:
    question = next((_text(m) for m in reversed(messages) if m.get("role") == "user"), "")
    asked = words(question)
    context = "\n".join(_text(m) for m in messages[:-1])
    best = max(
        (line for line in re.split(r"(?<=[.!?])\s+|\n", unescape(context)) if line.strip()),
        key=lambda line: _coverage(asked, words(line)),
        default="",
    )
    best = re.sub(r"<[^>]+>", " ", best)
    return "From what we talked about: " + " ".join(best.split()[:30]), None


_REPLIES: dict[str, Callable[[list[dict[str, Any]]], tuple[str, float | None]]] = {
    "topic_window": _topic_window,
    "splitter": _splitter,
    "brief_writer": _brief_writer,
    "index_router": _index_router,
    "responder": _responder,
}
