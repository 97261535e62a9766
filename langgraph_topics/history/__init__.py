"""The history indexed for people: refined turns, event units, buckets, themes (seed 004 §3).

The work of understanding a history is done once, not at every question: a split records one
neutral line per exchange (``refined_turns``); when asked, the exchanges are grouped into
event units and buckets (``units``), the recurring concepts found (``themes``) and each traced
through time with the original messages (``timeline``), computed natively from those records
and cached (``view``). ``TopicMemory.themes`` and ``TopicMemory.trace`` are the questions;
``viz.theme_timeline`` draws a trace.
"""
