"""Subtopics: a topic grown past its window limit is divided, never compressed (seed 000 §4.5, §8).

``limits`` says when a topic is too large, ``segments`` where its messages are cut, and
``division`` makes the cut: one ``split_topic`` in the store, briefs for the children, the
registry records of the parent (status ``split``) and its children.
"""
