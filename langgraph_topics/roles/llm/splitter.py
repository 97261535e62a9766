"""LLM splitter (seed 000 §4.4, §6.4): strong model, assigns every message exactly once."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from langgraph_topics.prompts.loader import load_prompt
from langgraph_topics.roles.llm.calling import CallPolicy, ModelCaller
from langgraph_topics.roles.llm.escaping import escape_attribute, escape_text, render_messages
from langgraph_topics.roles.llm.language import call_language
from langgraph_topics.roles.llm.xml_reply import (
    ReplyFormatError,
    child_text,
    elements,
    root_element,
)
from langgraph_topics.roles.protocols import (
    NewTopic,
    SplitAssignment,
    SplitPlan,
    Splitter,
    TopicInfo,
)
from langgraph_topics.state.records import StoredMessage
from langgraph_topics.tuning.role_stats import CallRecord

log = logging.getLogger(__name__)

ELEMENT = "topic_split"
_KINDS = ("existing_active", "existing_inactive", "new")
NATIVE_KEY_PREFIX = "native:"
"""Prefix of new-topic keys made by the native splitter for messages the model left out."""


def render_topics(topics: Sequence[TopicInfo]) -> str:
    """The existing topics as escaped ``<topic>`` elements."""
    lines = [
        f'<topic id="{escape_attribute(t["id"])}" status="{t["status"]}">'
        f"<name>{escape_text(t['name'])}</name><brief>{escape_text(t['brief'])}</brief></topic>"
        for t in topics
    ]
    return "\n".join(lines) or "-"


def render_units(units: Sequence[Sequence[StoredMessage]]) -> str:
    """The messages to split, one ``<exchange>`` per unit."""
    return "\n".join(
        f'<exchange n="{n}">\n{render_messages(unit)}\n</exchange>'
        for n, unit in enumerate(units, 1)
    )


def _topic_key(name: str) -> str:
    return "new:" + re.sub(r"\s+", " ", name).strip().casefold()


_EXCHANGE_RUN = re.compile(r"^(\d+)(?:\s*-\s*(\d+))?$")


def exchange_ids(
    text: str, units: Sequence[Sequence[StoredMessage]], problems: list[str]
) -> list[str]:
    """The message ids of the exchanges ``text`` names (``"1-4, 7"``: numbers from 1, runs).

    One assignment per run of exchanges keeps the reply short: about 20 tokens a run instead
    of 40 a message, so a split of 138 messages no longer outlasts the model's timeout.
    """
    ids: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        found = _EXCHANGE_RUN.match(part)
        first, last = (int(found[1]), int(found[2] or found[1])) if found else (0, -1)
        if not found or not 1 <= first <= last <= len(units):
            problems.append(f"unknown exchange {part!r} (use numbers 1 to {len(units)})")
            continue
        ids += [m["id"] for unit in units[first - 1 : last] for m in unit]
    return ids


def parse_plan(
    reply: str,
    message_ids: Sequence[str],
    topic_ids: set[str],
    units: Sequence[Sequence[StoredMessage]] = (),
) -> SplitPlan:
    """The plan of a ``<topic_split>`` reply, validated against the messages and topics.

    An assignment names its exchanges (``exchanges="1-3"``, numbered as the prompt shows
    ``units``) or, as older prompts asked, its messages (``msg_id``). Messages the reply does
    not mention are left out of the plan (the caller handles them).

    Raises:
        ReplyFormatError: No single closed ``<topic_split>``; an unknown message id or topic id;
            a message assigned twice; an unknown ``topic`` kind; a new topic without a name.
    """
    body = root_element(reply, ELEMENT)
    wanted = set(message_ids)
    seen: set[str] = set()
    problems: list[str] = []
    by_destination: dict[tuple[str | None, str | None], list[str]] = {}
    new_topics: dict[str, NewTopic] = {}
    for attributes, inner in elements(body, "assignment"):
        runs = attributes.get("exchanges", attributes.get("exchange", "")).strip()
        if runs and units:
            ids = exchange_ids(runs, units, problems)
        else:
            ids = [i for i in re.split(r"[\s,]+", attributes.get("msg_id", "").strip()) if i]
        kind = attributes.get("topic", "").strip()
        if not ids:
            if not runs:
                problems.append("an <assignment> names no exchanges")
            continue
        if kind not in _KINDS:
            problems.append(f"msg_id {ids[0]}: topic must be one of {', '.join(_KINDS)}")
            continue
        destination: tuple[str | None, str | None]
        if kind == "new":
            name = attributes.get("topic_name", "").strip()
            if not name:
                problems.append(f"msg_id {ids[0]}: a new topic needs a topic_name")
                continue
            key = _topic_key(name)
            brief = child_text(inner, "summary") or ""
            if key not in new_topics:
                new_topics[key] = {"key": key, "name": name, "brief": brief}
            elif brief and not new_topics[key]["brief"]:
                new_topics[key]["brief"] = brief
            destination = (None, key)
        else:
            topic_id = attributes.get("topic_id", "").strip()
            if topic_id not in topic_ids:
                problems.append(f"unknown topic_id {topic_id!r} (use an id from the topic list)")
                continue
            destination = (topic_id, None)
        for message_id in ids:
            if message_id not in wanted:
                problems.append(f"unknown msg_id {message_id!r}")
            elif message_id in seen:
                problems.append(f"msg_id {message_id} is assigned twice")
            else:
                seen.add(message_id)
                by_destination.setdefault(destination, []).append(message_id)
    if problems:
        raise ReplyFormatError("; ".join(dict.fromkeys(problems)))
    assignments: list[SplitAssignment] = [
        {"message_ids": ids, "topic_id": topic_id, "new_key": new_key}
        for (topic_id, new_key), ids in by_destination.items()
    ]
    return {"assignments": assignments, "new_topics": list(new_topics.values())}


def missing_messages(plan: SplitPlan, message_ids: Sequence[str]) -> list[str]:
    """Ids of messages the plan does not assign, in order."""
    assigned = {i for a in plan["assignments"] for i in a["message_ids"]}
    return [i for i in message_ids if i not in assigned]


class LlmSplitter:
    """Assigns the older unsplit messages to topics with a chat model.

    A reply that leaves messages out is asked again, naming them; messages still left out are
    assigned by the native splitter (never dropped). A reply malformed after the retry, or a
    failing model, hands the whole call to the native splitter.

    Args:
        model: The strong model.
        fallback: The native splitter.
        policy: Retries, prompt directory, language preference.
        brief_bytes: Size of a new topic's brief, told to the model.
    """

    def __init__(
        self, model: BaseChatModel, fallback: Splitter, policy: CallPolicy, *, brief_bytes: int
    ) -> None:
        self.caller = ModelCaller("splitter", model, policy)
        self.fallback = fallback
        self.policy = policy
        self.brief_bytes = brief_bytes

    def messages(
        self, units: Sequence[Sequence[StoredMessage]], topics: Sequence[TopicInfo], language: str
    ) -> list[BaseMessage]:
        """The prompt: the static system prompt, then the topics and the messages."""
        system = load_prompt("split", language, self.policy.prompt_dir).render(
            brief_bytes=self.brief_bytes
        )
        body = load_prompt("split_input", language, self.policy.prompt_dir).render(
            topics=render_topics(topics), messages=render_units(units)
        )
        return [SystemMessage(system), HumanMessage(body)]

    def split(
        self, units: Sequence[Sequence[StoredMessage]], topics: Sequence[TopicInfo]
    ) -> SplitPlan:
        """Assign every message of ``units``."""
        flat = [m for unit in units for m in unit]
        ids = [m["id"] for m in flat]
        topic_ids = {t["id"] for t in topics}
        language = call_language(self.policy.language, flat)
        record = CallRecord("splitter")
        replies = [0]

        def parse(reply: AIMessage) -> SplitPlan:
            replies[0] += 1
            plan = parse_plan(reply.text, ids, topic_ids, units)
            missing = missing_messages(plan, ids)
            # Left-out messages are asked for while a retry remains; the last reply's plan is
            # kept as it is and the native splitter places what is still missing.
            if missing and replies[0] <= self.policy.format_retries:
                left = set(missing)
                numbers = [
                    str(n) for n, unit in enumerate(units, 1) if any(m["id"] in left for m in unit)
                ]
                raise ReplyFormatError(
                    f"{len(numbers)} exchange(s) not assigned: {', '.join(numbers[:20])}"
                )
            return plan

        def call() -> SplitPlan:
            plan = self.caller.ask(
                self.messages(units, topics, language),
                parse,
                element=ELEMENT,
                language=language,
                record=record,
            )
            return self._complete(plan, units, topics, record)

        return self.caller.guarded(
            record, call, lambda: self.fallback.split(units, topics), fallback_on_failure=True
        )

    def _complete(
        self,
        plan: SplitPlan,
        units: Sequence[Sequence[StoredMessage]],
        topics: Sequence[TopicInfo],
        record: CallRecord,
    ) -> SplitPlan:
        """Assign the units the model left out with the native splitter."""
        missing = set(missing_messages(plan, [m["id"] for unit in units for m in unit]))
        if not missing:
            return plan
        # A unit is partly assigned only when the model separated a question from its answer;
        # the split node keeps such a unit together, so only wholly missing units are placed.
        leftover = [unit for unit in units if all(m["id"] in missing for m in unit)]
        if not leftover:
            return plan
        log.warning("splitter: %d unit(s) left out by the model; native placement", len(leftover))
        record.errors.append(f"{len(leftover)} unit(s) placed by the native splitter")
        extra = self.fallback.split(leftover, topics)
        renamed = {t["key"]: NATIVE_KEY_PREFIX + t["key"] for t in extra["new_topics"]}
        assignments: list[SplitAssignment] = list(plan["assignments"])
        for assignment in extra["assignments"]:
            key = assignment["new_key"]
            assignments.append(
                {
                    "message_ids": assignment["message_ids"],
                    "topic_id": assignment["topic_id"],
                    "new_key": renamed.get(key, key) if key is not None else None,
                }
            )
        new_topics: list[NewTopic] = list(plan["new_topics"])
        for topic in extra["new_topics"]:
            new_topics.append(
                {"key": renamed[topic["key"]], "name": topic["name"], "brief": topic["brief"]}
            )
        return {"assignments": assignments, "new_topics": new_topics}
