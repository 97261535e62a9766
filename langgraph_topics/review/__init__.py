"""The periodic review of a thread's topics (seed 000 §4.8, §7): what the review nodes decide.

``clock`` reads the time a review judges by, ``criteria`` says which topics are archived,
``duplicates`` which are merged, ``filing`` what an archived topic keeps, ``registry`` how the
checkpointed registry follows. The nodes (``nodes/review_*.py``) and the graph
(``graph/review.py``) do the writing.
"""
