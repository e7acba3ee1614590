#!/usr/bin/env python3
"""Writes variants of a recorded Core long-polling session (a JSON one: fixtures/core/
js-*-json-LongPolling-add.jsonl) whose poll answers hold the records in other batches than the
server sends them, or a record missing, extra or changed, or another status. tests/replay/run.sh
replays them against the backend: the batchings must pass, the rest must fail.

    python3 tests/replay/vary-core-polls.py FIXTURE OUTDIR

Written to OUTDIR:
  moved.jsonl    the welcome push moved from the first records poll to the next (the server sends
                 it with the handshake answer, or alone: either way one poll more than recorded)
  spread.jsonl   one record per poll: handshake answer; welcome; both results in the third poll
  missing.jsonl  the welcome push left out of the recording (the server sends one record more)
  extra.jsonl    a record the server never sends added to the last records poll
  changed.jsonl  the first result 42 recorded as 43
  status.jsonl   the last poll's 204 recorded as 404
"""
import json
import os
import sys

RS = "\x1e"


def load(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def polls(lines):
    """The poll answers that carry records, in file order (GET requests' 200 answers with a body)."""
    gets = {l["id"] for l in lines if l.get("type") == "http-request" and l.get("method") == "GET"
            and "id=" in l.get("rawQuery", "") and not l.get("path", "").endswith("/negotiate")}
    return [l for l in lines if l.get("type") == "http-response" and l.get("id") in gets
            and l.get("status") == 200 and l.get("body")]


def records(answer):
    return [r for r in answer["body"].split(RS) if r]


def put(answer, recs):
    answer["body"] = "".join(r + RS for r in recs)


def write(outdir, name, lines):
    with open(os.path.join(outdir, name), "w", encoding="utf-8") as f:
        for l in lines:
            f.write(json.dumps(l, ensure_ascii=False, separators=(",", ":")) + "\n")


def variant(path, change):
    lines = load(path)
    change(lines, polls(lines))
    return lines


def moved(lines, p):
    first = records(p[0])
    put(p[0], first[:1])
    put(p[1], first[1:] + records(p[1]))


def spread(lines, p):
    first, rest = records(p[0]), [r for a in p[1:] for r in records(a)]
    put(p[0], first[:1])
    put(p[1], first[1:])
    put(p[2], rest)
    for a in p[3:]:
        put(a, [])


def missing(lines, p):
    put(p[0], records(p[0])[:1])


def extra(lines, p):
    put(p[-1], records(p[-1]) + ['{"type":1,"target":"never","arguments":[]}'])


def changed(lines, p):
    put(p[1], [r.replace('"result":42', '"result":43') for r in records(p[1])])


def status(lines, p):
    last = [l for l in lines if l.get("type") == "http-response" and l.get("status") == 204][-1]
    last["status"] = 404


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    path, outdir = sys.argv[1], sys.argv[2]
    for name, change in (("moved", moved), ("spread", spread), ("missing", missing), ("extra", extra),
                         ("changed", changed), ("status", status)):
        write(outdir, name + ".jsonl", variant(path, change))


if __name__ == "__main__":
    main()
