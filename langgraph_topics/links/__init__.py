"""Links between topics that turns write as they go (seed 000 §9: "the reference relations").

Merges and divisions need nothing here: their own records are their links
(``stores/link_kinds``). What a turn learns on the side (two topics quoted together) is
written through :func:`quiet.link_once`, which never fails the turn and costs nothing once a
link is known.
"""
