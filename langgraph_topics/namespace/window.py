"""Large tool results in a window: a reference and a preview, the full text for one round.

Every window built for a model (the main window, the topic windows, the estimate of step 0)
shows a large tool result as its ``namespace://tool/<hash>`` reference plus a preview of its
key information; the message keeps its id, role and tool-call id, so a call and its result
stay one exchange (invariant 8). The working set, the topic files and the transcript keep the
full text. A reference the responder read (``read_namespace``) is replaced by the full text,
within the budget, in the window of the next answer of the same turn only (seed 001 T2: "the
next round's tool_result message has the full content in place of the reference"): in the
tool message itself, or in its quote when a topic quotes it; only a read of a result the
window does not show goes to the end of the system prompt.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import Any

from langgraph_topics.namespace.policy import NamespacePolicy
from langgraph_topics.namespace.preview import PREVIEW_CHARS, key_information
from langgraph_topics.namespace.reference import REFERENCE_PREFIX, digest_of, reference_for
from langgraph_topics.prompts.loader import load_prompt
from langgraph_topics.prompts.main_window import quote_line, render_system_prompt
from langgraph_topics.roles.llm.escaping import escape_text, quote_element
from langgraph_topics.state.records import AssembledContext, SectionTokens, StoredMessage
from langgraph_topics.state.working_set import recent_messages
from langgraph_topics.stores.namespace_store import NamespaceEntryError, NamespaceStore
from langgraph_topics.tokens import TokenCounter, message_tokens

log = logging.getLogger(__name__)

READ_SHARE = 0.8
"""Share of the window's free room the texts read this turn may take."""
SHORTENED_MARK = " …[shortened to fit the window; read it again for the rest]"
FIT_TRIES = 4
"""Times a text read is shortened again when the placed window passes the budget (a
tokenizer merging across the seams, an escaped quote) before the reads are left out."""


def reference_text(
    message: StoredMessage,
    language: str,
    prompt_dir: Path | None = None,
    *,
    preview_chars: int = PREVIEW_CHARS,
) -> str:
    """What a window shows in place of a large tool result: reference, size, preview."""
    content = message["content"]
    preview = key_information(content, language, preview_chars)
    return _reference_text(content, preview, language, prompt_dir)


def _reference_text(content: str, preview: str, language: str, prompt_dir: Path | None) -> str:
    rendered = load_prompt("namespace_reference", language, prompt_dir).render(
        reference=reference_for(content),
        lines=len(content.splitlines()),
        size=len(content.encode("utf-8")),
        preview=preview,
    )
    return rendered.strip()


def canonical_reference(reference: str) -> str | None:
    """``namespace://tool/<digest>`` of the first reference in ``reference``, if any."""
    digest = digest_of(reference)
    return None if digest is None else REFERENCE_PREFIX + digest


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

    Use: :meth:`views` (and :meth:`view`) of every message the window may show, then
    :meth:`prepare` (the tokens to keep free), the assembly within what is left, then
    :meth:`finish` (the texts read in place of their references, the note on references).

    Args:
        store: Where the full texts go (and are read back from).
        policy: Which tool results are large.
        language: Prompt language.
        prompt_dir: Prompt overrides.
        reads: References the responder asked to read this turn (shown in full).
        can_read: Whether the responder may still ask for a reference this turn.
        preview_chars: Bound of a preview.
        counting: The reads made by the ``read_namespace`` call this window answers (the
            graph's responder): each counts one access to its entry. Reads made through
            the agent middleware were counted by its tool already.
    """

    store: NamespaceStore
    policy: NamespacePolicy
    language: str
    prompt_dir: Path | None = None
    reads: Sequence[str] = ()
    can_read: bool = True
    preview_chars: int = PREVIEW_CHARS
    counting: Collection[str] = ()
    shown: dict[str, str] = field(default_factory=dict)
    """Reference → id of the message shown as it."""
    problems: list[str] = field(default_factory=list)
    """One line per damaged entry met (the text then came from the message)."""
    _full: dict[str, str] = field(default_factory=dict)
    _ids: dict[str, list[str]] = field(default_factory=dict)
    """Reference → ids of every message shown as it (the same text may come twice)."""
    _calls: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Tool-call id → the call's arguments, from the messages seen (kept with the entry)."""
    _puts: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Reference → what it was stored with (to store it again over a damaged entry)."""
    _notes: list[str] = field(default_factory=list)
    """The note on references and the lines on unknown references (system prompt)."""
    _texts: dict[str, str] = field(default_factory=dict)
    """Reference read → its text, shortened to its share of the budget."""
    _wholes: dict[str, str] = field(default_factory=dict)
    """Reference read → its whole text (what a text shortened again is cut from)."""

    def learn_calls(self, messages: Iterable[StoredMessage]) -> None:
        """Remember the arguments of the tool calls among ``messages`` (kept with entries)."""
        for message in messages:
            for call in message.get("tool_calls", ()):
                call_id = call.get("id")
                args = call.get("args")
                if isinstance(call_id, str) and isinstance(args, dict):
                    self._calls.setdefault(call_id, args)

    def view(self, message: StoredMessage) -> StoredMessage:
        """The message as the window shows it; a large tool result is stored first."""
        if not self.policy.is_large(message):
            return message
        content = message["content"]
        preview = key_information(content, self.language, self.preview_chars)
        stored: dict[str, Any] = {
            "tool": message.get("name", ""),
            "args": self._calls.get(message.get("tool_call_id", "")),
            "summary": preview,
        }
        reference = self.store.put(content, **stored)
        self.shown[reference] = message["id"]
        ids = self._ids.setdefault(reference, [])
        if message["id"] not in ids:
            ids.append(message["id"])
        self._full[reference] = content
        self._puts.setdefault(reference, stored)
        shown = _reference_text(content, preview, self.language, self.prompt_dir)
        return {**message, "content": shown}

    def views(self, messages: Iterable[StoredMessage]) -> list[StoredMessage]:
        """``view`` of each message (their tool calls' arguments learnt first)."""
        given = list(messages)
        self.learn_calls(given)
        return [self.view(m) for m in given]

    def readable(self, message_ids: Iterable[str]) -> list[str]:
        """References of the window's messages the responder may still read."""
        if not self.can_read:
            return []
        present = set(message_ids)
        read = {canonical_reference(r) for r in self.reads}
        return [r for r, i in self.shown.items() if i in present and r not in read]

    def prepare(
        self,
        working: Sequence[StoredMessage],
        *,
        keep_recent: int,
        budget: int,
        counter: TokenCounter,
    ) -> int:
        """Work out the texts read and the note; the tokens the assembly must leave free.

        0 when the window shows no reference and nothing was read (the window is then
        exactly what it was without the namespace). The texts read may take ``READ_SHARE``
        of what the instructions and the recent messages (``working``, viewed) leave: the
        responder asked for them, but the recalled evidence keeps a part. They share it in
        the order they were asked for, each shortened to what is left.
        """
        self._notes, self._texts, self._wholes = [], {}, {}
        if not self.shown and not self.reads:
            return 0
        note = load_prompt("namespace_note", self.language, self.prompt_dir).render().strip()
        self._notes.append(note)
        used = counter(note) + 2
        fixed = counter(render_system_prompt([], self.language, self.prompt_dir))
        recent = recent_messages(working, keep_recent)
        room = budget - fixed - sum(message_tokens(m, counter) for m in recent)
        share = int(max(0, room) * READ_SHARE)
        texts = 0
        counting = {canonical_reference(r) for r in self.counting}
        template = load_prompt("namespace_read", self.language, self.prompt_dir)
        for asked in dict.fromkeys(self.reads):
            reference = canonical_reference(asked)
            content = None if reference is None else self._read(reference, reference in counting)
            if reference is None or content is None:
                text = load_prompt("namespace_unknown", self.language, self.prompt_dir).render(
                    reference=asked
                )
                self._notes.append(text.strip())
                used += counter(text) + 2
                continue
            if reference in self._texts:
                continue
            self._wholes[reference] = content
            # Room for the fallback's frame too (a read the window does not show goes to the
            # system prompt, fenced): in place of its reference it takes less.
            frame = counter(template.render(reference=reference, content=quote_element(""))) + 2
            left = share - used - frame
            if left <= counter(SHORTENED_MARK):
                break
            if counter(escape_text(content)) > left:
                content = _prefix_within(content, left - counter(SHORTENED_MARK), counter)
                content += SHORTENED_MARK
            self._texts[reference] = content
            cost = counter(escape_text(content)) + frame
            used += cost
            texts += cost
        return counter("\n\n".join(self._notes)) + 4 + texts

    def finish(
        self, context: AssembledContext, budget: int, counter: TokenCounter
    ) -> AssembledContext:
        """The context assembled within ``budget`` minus :meth:`prepare`'s, finished.

        Each text read replaces its reference where the window shows it (the newest message
        shown as it: in the chat part, else its quote); a text read the window does not show
        and the note go to the end of the system prompt. The total is counted again: past
        the budget (a tokenizer merging across seams), the last text read is shortened.
        """
        if not self._notes and not self._texts and not self.shown:
            return context
        texts = dict(self._texts)
        finished = self._placed(context, texts, budget, counter)
        for _ in range(FIT_TRIES):
            if finished["tokens"] <= budget or not texts:
                break
            # The last text read gives way: cut to the share of its placed cost that fits
            # (placed, a text may cost more than counted: a quote escapes its line breaks).
            reference = list(texts)[-1]
            others = {r: t for r, t in texts.items() if r != reference}
            without = self._placed(context, others, budget, counter)["tokens"]
            placed = finished["tokens"] - without
            fits = (budget - without) / placed if placed > 0 else 0.0
            target = int(counter(texts[reference]) * fits) - counter(SHORTENED_MARK) - 2
            if target <= counter(SHORTENED_MARK):
                del texts[reference]
            else:
                whole = self._wholes[reference]
                texts[reference] = _prefix_within(whole, target, counter) + SHORTENED_MARK
            finished = self._placed(context, texts, budget, counter)
        if finished["tokens"] > budget and texts:
            finished = self._placed(context, {}, budget, counter)
        return finished

    def _placed(
        self,
        context: AssembledContext,
        texts: dict[str, str],
        budget: int,
        counter: TokenCounter,
    ) -> AssembledContext:
        """``context`` with ``texts`` in place of their references, the notes appended."""
        messages = list(context["messages"])
        quoted = list(context["referenced_messages"])
        system = context["system_prompt"]
        sections: SectionTokens = {**context["sections"]}
        tokens = context["tokens"]
        recent = set(context["recent_ids"])
        unplaced: list[str] = []
        quotes_changed = False
        for reference, text in texts.items():
            ids = self._ids.get(reference, [])
            index = _last_index(messages, ids)
            if index is not None:
                old = messages[index]
                new: StoredMessage = {**old, "content": text}
                grown = message_tokens(new, counter) - message_tokens(old, counter)
                messages[index] = new
                tokens += grown
                if old["id"] in recent:
                    sections["recent"] += grown
                else:
                    sections["unsplit"] += grown
                continue
            index = _last_index(quoted, ids)
            line = quote_line(quoted[index]) if index is not None else ""
            if index is not None and line in system:
                quote: StoredMessage = {**quoted[index], "content": text}
                system = system.replace(line, quote_line(quote), 1)
                quoted[index] = quote
                quotes_changed = True
                continue
            template = load_prompt("namespace_read", self.language, self.prompt_dir)
            # A tool's output is data like any quoted message: fenced, never an instruction.
            unplaced.append(template.render(reference=reference, content=quote_element(text)))
        if quotes_changed:
            grown = counter(system) - counter(context["system_prompt"])
            tokens += grown
            sections["topics"] += grown
        addition = "\n\n".join(part.strip() for part in [*self._notes, *unplaced])
        if addition:
            before = counter(system)
            system = system.rstrip("\n") + "\n\n" + addition + "\n"
            grown = counter(system) - before
            tokens += grown
            sections["system"] += grown
        finished: AssembledContext = {
            **context,
            "messages": messages,
            "referenced_messages": quoted,
            "system_prompt": system,
            "tokens": tokens,
            "sections": sections,
            "budget": budget,
        }
        readable = self.readable(context["message_ids"])
        if readable:
            finished["namespace_refs"] = readable
        if self.reads:
            finished["namespace_read"] = list(dict.fromkeys(self.reads))
        return finished

    def _read(self, reference: str, count: bool) -> str | None:
        """The full text of a reference read; a damaged entry is rewritten from the message.

        ``count``: read it as ``read_namespace`` does (one access counted), else peek.
        """
        try:
            found = self.store.read(reference) if count else self.store.peek(reference)
        except NamespaceEntryError as error:
            self.problems.append(str(error))
            log.warning("%s", error)
            found = None
        if found is None and reference in self._full:
            found = self._full[reference]
            self.store.put(found, **self._puts.get(reference, {}))
            if count:
                self.store.read(reference)
        return found


def _last_index(messages: Sequence[StoredMessage], ids: Sequence[str]) -> int | None:
    """The place of the newest of ``messages`` whose id is in ``ids``."""
    if not ids:
        return None
    wanted = set(ids)
    for index in range(len(messages) - 1, -1, -1):
        if messages[index]["id"] in wanted:
            return index
    return None


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
