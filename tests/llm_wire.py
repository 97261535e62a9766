"""A local OpenAI-compatible chat-completions server serving scripted replies (stdlib only).

Tests point the real ``langchain-openai`` ``ChatOpenAI`` at it (``base_url``), so every reply
goes through the real client, the real HTTP wire and the real response parsing.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ROLE_MARKERS = (
    ("<topic_result>", "topic_window"),
    ("<topic_split>", "splitter"),
    ("<topic_brief>", "brief_writer"),
    ("<topic_routing>", "index_router"),
    ("<theme_phrases>", "theme_phrasing"),
)


@dataclass
class Reply:
    """One scripted answer."""

    text: str = ""
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    status: int = 200
    delay: float = 0.0
    truncate: bool = False
    """Send half the body and hang up (the client sees a broken response)."""
    cached_tokens: int = 0


@dataclass
class Request:
    """One request as the server received it."""

    body: dict[str, Any]
    role: str

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    @property
    def system(self) -> str:
        return next((str(m["content"]) for m in self.messages if m["role"] == "system"), "")

    @property
    def user(self) -> str:
        """The first user message (the role's input)."""
        return next((str(m["content"]) for m in self.messages if m["role"] == "user"), "")

    @property
    def last_user(self) -> str:
        return next((str(m["content"]) for m in reversed(self.messages) if m["role"] == "user"), "")

    @property
    def tools(self) -> list[str]:
        return [t["function"]["name"] for t in self.body.get("tools", [])]

    @property
    def prompt_text(self) -> str:
        return "\n\n".join(str(m.get("content") or "") for m in self.messages)


Handler = Callable[[Request], Reply]


def role_of(body: dict[str, Any]) -> str:
    system = next(
        (str(m["content"]) for m in body.get("messages", []) if m["role"] == "system"), ""
    )
    for marker, role in ROLE_MARKERS:
        if marker in system:
            return role
    return "responder"


class FakeOpenAI:
    """The server: queued replies per role first, then the role's handler."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.handlers: dict[str, Handler] = {}
        self.queues: dict[str, deque[Reply]] = {}
        self._lock = threading.Lock()
        server = self

        class _Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                reply = server._reply_for(body)
                try:
                    server._send(self, reply)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def script(self, role: str, *replies: Reply) -> None:
        with self._lock:
            self.queues.setdefault(role, deque()).extend(replies)

    def on(self, role: str, handler: Handler) -> None:
        self.handlers[role] = handler

    def of_role(self, role: str) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.role == role]

    def _reply_for(self, body: dict[str, Any]) -> Reply:
        request = Request(body, role_of(body))
        with self._lock:
            self.requests.append(request)
            queue = self.queues.get(request.role)
            if queue:
                return queue.popleft()
        handler = self.handlers.get(request.role)
        if handler is None:
            return Reply(status=500, text="no handler for " + request.role)
        return handler(request)

    @staticmethod
    def _send(http: BaseHTTPRequestHandler, reply: Reply) -> None:
        if reply.delay:
            time.sleep(reply.delay)
        if reply.status != 200:
            payload = json.dumps({"error": {"message": reply.text or "scripted failure"}}).encode()
        else:
            message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
            if reply.tool_calls:
                message["tool_calls"] = [
                    {
                        "id": f"call_{i}",
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)},
                    }
                    for i, (name, args) in enumerate(reply.tool_calls)
                ]
            prompt_tokens = 100 + reply.cached_tokens
            payload = json.dumps(
                {
                    "id": "chatcmpl-test",
                    "object": "chat.completion",
                    "created": 0,
                    "model": "fake",
                    "choices": [
                        {
                            "index": 0,
                            "message": message,
                            "finish_reason": "tool_calls" if reply.tool_calls else "stop",
                        }
                    ],
                    "usage": {
                        "prompt_tokens": prompt_tokens,
                        "completion_tokens": 10,
                        "total_tokens": prompt_tokens + 10,
                        "prompt_tokens_details": {"cached_tokens": reply.cached_tokens},
                    },
                }
            ).encode()
        http.send_response(reply.status)
        http.send_header("Content-Type", "application/json")
        http.send_header("Content-Length", str(len(payload)))
        http.end_headers()
        http.wfile.write(payload[: len(payload) // 2] if reply.truncate else payload)
        http.wfile.flush()
        if reply.truncate:
            http.close_connection = True


MESSAGE = re.compile(r'<message id="([^"]+)" role="(\w+)"[^>]*>(.*?)</message>', re.DOTALL)
NUMBERED = re.compile(r'<m n="([^"]+)" role="(\w+)"[^>]*>(.*?)</m>', re.DOTALL)
"""A topic window's lean markup: a reply names a message by its number."""


def message_ids(block: str) -> list[str]:
    """What a reply may name each message of a prompt block by: its id, or its number."""
    return [m.group(1) for m in MESSAGE.finditer(block)] or [
        m.group(1) for m in NUMBERED.finditer(block)
    ]


def user_texts(block: str) -> list[str]:
    """The user messages' texts of a prompt block, in order (either markup)."""
    found = MESSAGE.findall(block) or NUMBERED.findall(block)
    return [text for _, role, text in found if role == "user"]


def section(text: str, tag: str) -> str:
    match = re.search(rf"<{tag}>(.*?)</{tag}>", text, re.DOTALL)
    return match.group(1) if match else ""


def topic_result(score: float, refs: list[str] = (), summary: str = "") -> str:  # type: ignore[assignment]
    parts = [f"<topic_result>\n<relevance_score>{score}</relevance_score>"]
    if refs:
        parts.append("<referenced_messages>\n" + "\n".join(refs) + "\n</referenced_messages>")
    if summary:
        parts.append(f"<summary>{summary}</summary>")
    return "\n".join(parts) + "\n</topic_result>"
