"""The history indexed for people: refined turns, event units, buckets, themes (seed 004 §3).

The work of understanding a history is done once, not at every question: the review records
one neutral line per exchange split since the last (``refined_turns``; a question records
what is missing), off every turn; when asked, the exchanges are grouped into
event units and buckets (``units``), the recurring concepts found (``themes``) and each traced
through time with the original messages (``timeline``), computed natively from those records
and cached (``view``). ``TopicMemory.themes`` and ``TopicMemory.trace`` are the questions;
``viz.theme_timeline`` draws a trace.
"""
