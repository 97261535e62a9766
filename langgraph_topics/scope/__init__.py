"""A memory scope above the thread: one user's threads read as one memory (issue 40).

Federation: every thread of a user keeps its own stores, locks, checkpoints and crash/fork
guarantees exactly as a plain thread does (its id is the user-scoped id of ``threads.py``, so
two users' threads of the same name never share a file, a namespace or a checkpoint); a
registry (``registry.py``) records which threads a user has. In user scope a turn also reads
the user's other threads, each under its own files lock and never for writing
(``recall.py``), and the main window quotes what they hold with their thread and date
(``window.py``). ``forget.py`` deletes a user; ``migration/user_scope.py`` moves plain
threads into a user's scope.
"""
