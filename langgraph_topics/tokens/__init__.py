"""Token counting: a real tokenizer by default, replaceable by the user's own counter."""

from langgraph_topics.tokens.counting import (
    TokenCounter,
    default_token_counter,
    estimate_tokens_by_script,
    message_tokens,
)

__all__ = ["TokenCounter", "default_token_counter", "estimate_tokens_by_script", "message_tokens"]
