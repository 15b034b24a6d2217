"""A user's verifier for a word count (``output.verify``; docs/your-pipeline.md "Your own
verifier"): reads the committed input and the output the harness wrote as JSON Lines and prints
what it found, one JSON object a line. It knows nothing of the harness but those files.

    python word_count_verify.py --input input.jsonl --output output.jsonl [--aborted aborted.jsonl]

The application under test (harness/examples/streams/WordCount.java) counts the words of each
input record's value (split on whitespace) and writes every count update to the output (key:
the word, value: the count). Exactly once, a word's last update in the output (its highest
offset; a word's updates share one partition) is how many committed input records hold it,
and the updates of one word never go down. Findings (``kind``):

* ``count-too-high``: a word's final count is above its committed occurrences (inputs counted
  twice; with ``counted_aborted`` > 0 when the word also occurs in aborted input);
* ``count-too-low``: below them, or the word has no output at all (inputs not counted);
* ``count-went-down``: an update lower than an earlier one of the same word;
* ``unknown-word``: a word in the output that no input record holds, committed or aborted.

Exit 0 whatever it found; 2 for files it cannot read.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict


def records(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def words(value: str | None) -> list[str]:
    return (value or "").split()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--input", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--aborted")
    args = ap.parse_args(argv)
    try:
        inputs, outputs = records(args.input), records(args.output)
        aborted = records(args.aborted) if args.aborted else []
    except (OSError, ValueError) as e:
        print(f"word_count_verify: {e}", file=sys.stderr)
        return 2
    expected = Counter(w for r in inputs for w in words(r["value"]))
    in_aborted = Counter(w for r in aborted for w in words(r["value"]))
    updates: dict[str, list[tuple[int, int, int]]] = defaultdict(list)  # word -> (partition, offset, count)
    for r in outputs:
        try:
            n = int(r["value"])
        except (TypeError, ValueError):
            n = -1
        updates[r["key"]].append((r["partition"], r["offset"], n))

    def emit(kind: str, word: str, explanation: str, **fields) -> None:
        print(json.dumps({"kind": kind, "word": word, "explanation": explanation, **fields}))

    for word, ups in sorted(updates.items(), key=lambda kv: str(kv[0])):
        ups.sort()
        final = ups[-1][2]
        where = f"out partition {ups[-1][0]} offset {ups[-1][1]}"
        if word not in expected and word not in in_aborted:
            emit("unknown-word", word, f"{word!r} is in the output ({where}: {final}) but in no input record",
                 final=final)
            continue
        want = expected.get(word, 0)
        if final > want:
            emit("count-too-high", word, f"{word!r}: final count {final} ({where}) but {want} committed input "
                 f"record(s) hold it" + (f"; {in_aborted[word]} aborted one(s) do" if in_aborted.get(word) else ""),
                 final=final, expected=want, counted_aborted=in_aborted.get(word, 0), updates=len(ups))
        elif final < want:
            emit("count-too-low", word, f"{word!r}: final count {final} ({where}) but {want} committed input "
                 "record(s) hold it", final=final, expected=want, updates=len(ups))
        for (p0, o0, c0), (p1, o1, c1) in zip(ups, ups[1:]):
            if c1 < c0:
                emit("count-went-down", word, f"{word!r}: count {c0} at offset {o0}, then {c1} at offset {o1} "
                     f"(partition {p1})", before=c0, after=c1)
                break
    for word in sorted(set(expected) - set(updates)):
        emit("count-too-low", word, f"{word!r}: {expected[word]} committed input record(s) hold it, but the "
             "output has no count for it", final=0, expected=expected[word], updates=0)
    print(json.dumps({"stats": {"input_records": len(inputs), "aborted_records": len(aborted),
                                "words": len(expected), "output_records": len(outputs),
                                "output_words": len(updates)}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
