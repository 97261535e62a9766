"""Splitting the older unsplit messages into topics: planned apart from the writes.

``prepared`` works a split out (the splitter's plan, the new briefs: model calls, no
writes); ``background`` runs that after a turn's reply, where no user waits for it; the
split node (``nodes/split.py``) writes a prepared split, checkpointed like any step.
"""
