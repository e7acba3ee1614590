#!/usr/bin/env python3
"""test_bench_report.py - scripts/bench's report helpers, without running anything.

Run: python3 tests/bench/test_bench_report.py (scripts/test.sh's bench stage runs it)."""
import importlib.machinery
import importlib.util
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
loader = importlib.machinery.SourceFileLoader("bench", os.path.join(ROOT, "scripts", "bench"))
spec = importlib.util.spec_from_loader("bench", loader)
bench = importlib.util.module_from_spec(spec)
loader.exec_module(bench)

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


# The disconnect table's summary row: the loadgen's JSON gives 30 (an int) as often as 30.5.
rows = [["1,000", "3,000", 30, 90, "1,000", 0.0, 59.3], ["100,000", "3,000", 50.5, 130, "100,000", 20.0, 77.8]]
line = bench.disconnect_summary(rows)
check(line is not None and "30 µs (1,000 groups) vs 50 µs (100,000 groups)" in line[1],
      f"disconnect summary with int CPU figures: {line}")
check(bench.disconnect_summary(rows[:1]) is None, "one row: no summary")
check(bench.disconnect_summary([rows[0], rows[1][:2] + [None] + rows[1][3:]]) is None, "an unmeasured row: no summary")

# The hand-written last section survives a rewrite of the report.
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "B.md")
    with open(path, "w") as f:
        f.write("# generated\n\nold tables\n\n" + bench.HAND_BEGIN + "\n## by hand\n\ntext\n")
    kept = bench.kept_by_hand(path)
    check(kept.startswith("\n" + bench.HAND_BEGIN) and kept.endswith("text\n"), f"kept_by_hand: {kept!r}")
    with open(path, "w") as f:
        f.write("# generated only\n")
    check(bench.kept_by_hand(path) == "", "no hand section: nothing kept")

for f in failures:
    print(f"FAIL: {f}")
print(f"test_bench_report: {'FAILED' if failures else 'ok'}")
sys.exit(1 if failures else 0)
