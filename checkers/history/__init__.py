"""Tolerant reader of a run's history (``history.jsonl``, docs/history.md).

``load_history(source)`` never raises on bad content: a truncated or garbled last line is
dropped, garbled lines in the middle are skipped, malformed events and micro-operations are
skipped, and every such thing is recorded in ``History.problems`` (strings, in file order).
It raises only ``FileNotFoundError``/``OSError`` when ``source`` is a path that cannot be read
and ``TypeError`` when ``source`` is neither a path nor an iterable of event dicts.

An *op* is an invoke paired with its completion: the next event of the same process
(Jepsen ``history.clj`` pairing). An invoke with no completion by the end reads as ``info``.
Completions with no open invoke are reported and ignored. Nemesis events
(``process == "nemesis"``) are kept apart in ``History.nemesis``.

Columnar layout (polars):

``History.ops`` - one row per op, ordered by ``invoke_index`` (row number == ``op``):
    op (u32), invoke_index (i64), complete_index (i64, null if none), process (i64),
    f (categorical), type ("ok" | "fail" | "info"), invoke_time / complete_time (i64 ns since
    run start; complete_time null if none), transactional_id (str|null), group_id
    (str|null), final (bool: meta.final on invoke or completion), error (str|null: error
    name), commit_time (i64 ns|null: the completion's ``meta.commit_ns``, when the client
    asked to commit; a zombie paused inside the commit completes long after it).

``History.mops`` - one row per micro-op, ordered by (op, seq):
    op (u32), seq (u32, order inside the op; a poll's records keep the consumer's order),
    kind ("send" | "poll"), key (u32 id into ``History.keys``), offset (i64|null), value (i64).
    A send appears once, with the offset its completion reported (null if unknown); a poll
    micro-op contributes one row per returned record.

``History.extras`` maps op id -> {"value", "completion_value", "meta"} (and "error": the
completion's whole ``error``, name and message, when it has one) for ops other than
send/poll/txn (``assign``, ``subscribe``, ``init``, unknown ``f``s): they are few.

How a file is read (the fast path; see docs/checkers.md "The loader"):

0. The file is read in parts of at most 16 MB cut at line ends, each parsed, classified and
   tokenized on a worker thread (one per core; polars and numpy release the GIL), so its
   bytes and JSON texts are never all in memory at once.
1. polars parses the JSON Lines natively (``pl.read_ndjson`` with a fixed schema: the
   top-level fields typed, ``meta`` as a struct of the four fields the checkers use,
   ``value`` and ``error`` re-serialised by polars as canonical JSON text). A part with
   garbled lines fails as a whole; it is then bisected by line ranges down to blocks of
   _BISECT_MIN lines, read line by line with orjson (failures are garbled lines).
2. A line is *regular* when its fields have the expected types, its ``f`` is send/poll/txn,
   its ``value`` matches the micro-op grammar exactly (a regular expression over the
   canonical text; integers of at most 18 digits) and the raw line holds no backslash (so
   no string needs unescaping). Every other line (nemesis events, assign/init/..., anything
   odd) is parsed again with orjson and goes through the exact per-event code (``events``), the
   same code that reads a list of event dicts.
3. Regular completion values are cut into tokens by one ``str.extract_all`` (a send's key,
   a poll's key, integers, ``null``) and numpy turns the token stream into micro-op rows.
   Invoke values are not tokenized: the few invokes whose sends their completion does not
   list are read again from the file.
4. Invokes are paired with completions by sorting events by (process, position) and
   comparing each with its neighbour: no Python loop over events.

Modules, one per stage: ``model`` (History, constants), ``reader`` (file parts, classify),
``tokens`` (the value grammar and tokenizer), ``events`` and ``exact`` (the per-event path),
``pairing`` (invoke/completion pairs), ``assembly`` (micro-op rows, ``load_history``),
``checks`` (well-formedness of the paired history), ``arrays`` (numpy helpers).
"""

from __future__ import annotations

from .arrays import positions, stable_order
from .assembly import as_history, load_history
from .model import (BULK_FS, COMPLETION_TYPES, END, EVENT_TYPES, KIND, MAX_PROBLEMS, POLL, SEND,
                    TYPE, History)
from .tokens import VALUE_GRAMMAR

__all__ = ["BULK_FS", "COMPLETION_TYPES", "END", "EVENT_TYPES", "KIND", "MAX_PROBLEMS", "POLL",
           "SEND", "TYPE", "VALUE_GRAMMAR", "History", "as_history", "load_history", "positions",
           "stable_order"]
