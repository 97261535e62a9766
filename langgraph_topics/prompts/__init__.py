"""Prompt files (Chinese and English), loaded by name."""

from langgraph_topics.prompts.language import detect_language
from langgraph_topics.prompts.loader import PromptFile, load_prompt

__all__ = ["PromptFile", "detect_language", "load_prompt"]
