"""The relations between topics the package knows (seed 000 §9), and where each comes from.

A review's merge and a division already write one record naming the topics they relate
(``merged_topics``, ``subtopics``), in the same write as the change itself. The stores report
those relations as links without a ``link`` record of their own: no crash can then leave a
merge without its link (or a link without its merge), a retired topic needs no write after it
is retired, and threads merged or divided before links existed have them too. A relation that
no other record carries (two topics quoted together for one answer) is a ``link`` record.
"""

from __future__ import annotations

MERGED_LINK = "merged"
"""A review retired one topic into another (from the retired topic to the kept one)."""
SUBTOPIC_LINK = "subtopic"
"""A division made a subtopic (from the parent to each child)."""
RELATED_LINK = "related"
"""Two topics were quoted together in one turn's window (``links.quoted_together``)."""
