"""Large tool results in a window: a reference and a preview, the full text for one round.

Every window built for a model (the main window, the topic windows, the estimate of step 0)
shows a large tool result as its ``namespace://tool/<hash>`` reference plus a preview of its
key information; the message keeps its id, role and tool-call id, so a call and its result
stay one exchange (invariant 8). The working set, the topic files and the transcript keep the
full text. A reference the responder read (``read_namespace``) is shown in full, within the
budget, in the window of the next answer of the same turn only.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path

from langgraph_topics.namespace.policy import NamespacePolicy
from langgraph_topics.namespace.preview import PREVIEW_CHARS, key_information
from langgraph_topics.namespace.reference import REFERENCE_PREFIX, digest_of, reference_for
from langgraph_topics.prompts.loader import load_prompt
from langgraph_topics.prompts.main_window import render_system_prompt
from langgraph_topics.roles.llm.escaping import escape_text, quote_element
from langgraph_topics.state.records import AssembledContext, StoredMessage
from langgraph_topics.state.working_set import recent_messages
from langgraph_topics.stores.namespace_store import NamespaceEntryError, NamespaceStore
from langgraph_topics.tokens import TokenCounter, message_tokens

log = logging.getLogger(__name__)

READ_SHARE = 0.8
"""Share of the window's free room the texts read this turn may take."""
SHORTENED_MARK = " …[shortened to fit the window; read it again for the rest]"


def reference_text(
    message: StoredMessage,
    language: str,
    prompt_dir: Path | None = None,
    *,
    preview_chars: int = PREVIEW_CHARS,
) -> str:
    """What a window shows in place of a large tool result: reference, size, preview."""
    content = message["content"]
    rendered = load_prompt("namespace_reference", language, prompt_dir).render(
        reference=reference_for(content),
        lines=len(content.splitlines()),
        size=len(content.encode("utf-8")),
        preview=key_information(content, language, preview_chars),
    )
    return rendered.strip()


def windowed_messages(
    messages: Iterable[StoredMessage],
    policy: NamespacePolicy,
    language: str,
    prompt_dir: Path | None = None,
    *,
    preview_chars: int = PREVIEW_CHARS,
) -> list[StoredMessage]:
    """The messages as a window shows them (nothing is stored: for estimates and readers).

    Each topic window shows its whole topic every turn: the roles are read in one pass in C,
    and only a list holding tool results is looked at message by message (a topic of
    thousands of messages without one cost a Python call per message, every turn).
    """
    given = list(messages)
    if not policy.enabled or "tool" not in map(itemgetter("role"), given):
        return given
    return [
        {**m, "content": reference_text(m, language, prompt_dir, preview_chars=preview_chars)}
        if policy.is_large(m)
        else m
        for m in given
    ]


@dataclass
class NamespaceWindow:
    """The namespace side of one assembled window.

    Args:
        store: Where the full texts go (and are read back from).
        policy: Which tool results are large.
        language: Prompt language.
        prompt_dir: Prompt overrides.
        reads: References the responder asked to read this turn (shown in full).
        can_read: Whether the responder may still ask for a reference this turn.
        preview_chars: Bound of a preview.
    """

    store: NamespaceStore
    policy: NamespacePolicy
    language: str
    prompt_dir: Path | None = None
    reads: Sequence[str] = ()
    can_read: bool = True
    preview_chars: int = PREVIEW_CHARS
    shown: dict[str, str] = field(default_factory=dict)
    """Reference → id of the message shown as it."""
    problems: list[str] = field(default_factory=list)
    """One line per damaged entry met (the text then came from the message)."""
    _full: dict[str, str] = field(default_factory=dict)

    def view(self, message: StoredMessage) -> StoredMessage:
        """The message as the window shows it; a large tool result is stored first."""
        if not self.policy.is_large(message):
            return message
        content = message["content"]
        reference = self.store.put(content, tool=message.get("name", ""))
        self.shown[reference] = message["id"]
        self._full[reference] = content
        shown = reference_text(
            message, self.language, self.prompt_dir, preview_chars=self.preview_chars
        )
        return {**message, "content": shown}

    def views(self, messages: Iterable[StoredMessage]) -> list[StoredMessage]:
        """``view`` of each message."""
        return [self.view(m) for m in messages]

    def readable(self, message_ids: Iterable[str]) -> list[str]:
        """References of the window's messages the responder may still read."""
        if not self.can_read:
            return []
        present = set(message_ids)
        return [r for r, i in self.shown.items() if i in present and r not in self.reads]

    def system_addition(self, room: int, counter: TokenCounter) -> str:
        """Text added to the end of the system prompt: how to read references, the texts read.

        Empty when the window shows no reference and nothing was read (the prompt is then
        exactly what it was without the namespace). The texts read share ``room`` tokens, in
        the order they were asked for, each shortened to what is left.
        """
        if not self.shown and not self.reads:
            return ""
        parts = [load_prompt("namespace_note", self.language, self.prompt_dir).render().strip()]
        used = counter("\n\n".join(parts)) + 2
        for reference in dict.fromkeys(self.reads):
            content = self._read(reference)
            if content is None:
                text = load_prompt("namespace_unknown", self.language, self.prompt_dir).render(
                    reference=reference
                )
                parts.append(text.strip())
                used += counter(text) + 2
                continue
            # A tool's output is data like any quoted message: fenced, never an instruction.
            template = load_prompt("namespace_read", self.language, self.prompt_dir)
            frame = counter(template.render(reference=reference, content=quote_element(""))) + 2
            left = room - used - frame
            if left <= counter(SHORTENED_MARK):
                break
            if counter(escape_text(content)) > left:
                content = _prefix_within(content, left - counter(SHORTENED_MARK), counter)
                content += SHORTENED_MARK
            fenced = quote_element(content)
            text = template.render(reference=reference, content=fenced).strip()
            parts.append(text)
            used += counter(text) + 2
        return "\n\n".join(parts)

    def addition_within(
        self,
        working: Sequence[StoredMessage],
        *,
        keep_recent: int,
        budget: int,
        counter: TokenCounter,
    ) -> str:
        """``system_addition`` for a window of ``budget`` tokens over ``working`` (viewed).

        The texts read may take ``READ_SHARE`` of what the instructions and the recent
        messages leave: the responder asked for them, but the recalled evidence keeps a part.
        """
        if not self.shown and not self.reads:
            return ""
        fixed = counter(render_system_prompt([], self.language, self.prompt_dir))
        recent = recent_messages(working, keep_recent)
        room = budget - fixed - sum(message_tokens(m, counter) for m in recent)
        return self.system_addition(int(max(0, room) * READ_SHARE), counter)

    def finish(
        self, context: AssembledContext, addition: str, budget: int, counter: TokenCounter
    ) -> AssembledContext:
        """The context assembled within ``budget`` minus the addition, with the addition."""
        if not addition and not self.shown:
            return context
        finished: AssembledContext = {**context, "budget": budget}
        if addition:
            before = counter(context["system_prompt"])
            finished["system_prompt"] = (
                context["system_prompt"].rstrip("\n") + "\n\n" + addition + "\n"
            )
            grown = counter(finished["system_prompt"]) - before
            finished["tokens"] = context["tokens"] + grown
            finished["sections"] = {
                **context["sections"],
                "system": context["sections"]["system"] + grown,
            }
        readable = self.readable(context["message_ids"])
        if readable:
            finished["namespace_refs"] = readable
        if self.reads:
            finished["namespace_read"] = list(dict.fromkeys(self.reads))
        return finished

    def _read(self, reference: str) -> str | None:
        """The full text of a reference read; a damaged entry is rewritten from the message."""
        digest = digest_of(reference)
        if digest is None:
            return None
        canonical = REFERENCE_PREFIX + digest
        try:
            found = self.store.read(canonical)
        except NamespaceEntryError as error:
            self.problems.append(str(error))
            log.warning("%s", error)
            found = None
        if found is None and canonical in self._full:
            found = self._full[canonical]
            self.store.put(found)
        return found


def _prefix_within(text: str, tokens: int, counter: TokenCounter) -> str:
    """The longest prefix of ``text`` within ``tokens`` (binary search on characters)."""
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if counter(text[:middle]) <= tokens:
            low = middle
        else:
            high = middle - 1
    return text[:low]
