#!/usr/bin/env python3
"""Turns the raw loadgen lines written by bench/run.sh into a markdown report.

usage: python3 bench/report.py bench/results/foundation-<date>.raw.txt

Each figure is the median over the repetitions whose run was clean
(status=ok, no id mismatches, no malformed replies); failed runs are counted
and named next to the figure, never averaged in.
"""
import statistics
import sys
from collections import defaultdict

# The targets of the foundation issue, for netmodel against the null server.
PIPELINED_MIN_RATIO = 0.70
P50_MAX_RATIO = 1.25
STARTUP_MAX_MS = 5.0

SERVER_ORDER = {"null": 0, "netmodel": 1, "go": 2, "clangd": 3}


def parse(path):
    meta, runs = {}, []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("#"):
                key, _, value = line[1:].strip().partition("=")
                meta[key] = value
            elif line:
                runs.append(dict(tok.split("=", 1) for tok in line.split() if "=" in tok))
    return meta, runs


def clean(run):
    return (run.get("status") == "ok" and run.get("mismatches") == "0"
            and run.get("malformed") == "0")


class Cell:
    """All repetitions of one measurement (server, method, transport, framing, mode)."""

    def __init__(self):
        self.runs = []

    def median(self, field):
        values = [float(r[field]) for r in self.runs if clean(r) and field in r]
        return statistics.median(values) if values else None

    def failures(self):
        return sum(1 for r in self.runs if not clean(r))

    def reply_kind(self):
        replies = sum(int(r.get("replies", 0)) for r in self.runs)
        errors = sum(int(r.get("errors", 0)) for r in self.runs)
        if replies == 0:
            return None
        return "result" if errors == 0 else "error" if errors == replies else "mixed"


def fmt(value, spec, failures=0, total=0):
    text = "n/a" if value is None else format(value, spec)
    if failures:
        text += f" ({failures}/{total} failed)"
    return text


def main(path):
    meta, runs = parse(path)
    cells = defaultdict(Cell)
    for run in runs:
        key = (run["target"], run["method"], run["transport"], run["framing"], run["mode"])
        cells[key].runs.append(run)
    # run.sh's matrix order (dicts keep insertion order), servers grouped
    rows = sorted(dict.fromkeys(k[:4] for k in cells), key=lambda k: SERVER_ORDER.get(k[0], 9))

    def figure(row, mode, field, spec):
        cell = cells.get(row + (mode,))
        if not cell:
            return "—", None
        value = cell.median(field)
        return fmt(value, spec, cell.failures(), len(cell.runs)), value

    out = []
    out.append(f"# Foundation benchmark — {meta.get('date', '?')}\n")
    out.append(f"- machine: {meta.get('cpu', '?')}, {meta.get('cores', '?')} cores, "
               f"Linux {meta.get('kernel', '?')}")
    out.append(f"- commit: {meta.get('commit', '?')}; load average before "
               f"{meta.get('load_before', '?')}, after {meta.get('load_after', '?')}")
    out.append(f"- medians of {meta.get('runs', '?')} repetitions; ping-pong "
               f"{meta.get('pingpong_count', '?')} requests, pipelined "
               f"{meta.get('pipelined_count', '?')} requests with {meta.get('inflight', '?')} "
               f"in flight, start-up {meta.get('startup_runs', '?')} spawns (median)\n")

    out.append("| server | method | transport | framing | ping-pong p50 µs | ping-pong p99 µs "
               "| pipelined req/s | start-up ms | replies |")
    out.append("| --- | --- | --- | --- | ---: | ---: | ---: | ---: | --- |")
    values = {}
    for row in rows:
        p50, values[row + ("p50",)] = figure(row, "pingpong", "p50_us", ".1f")
        p99, _ = figure(row, "pingpong", "p99_us", ".1f")
        rps, values[row + ("rps",)] = figure(row, "pipelined", "rps", ",.0f")
        start, values[row + ("startup",)] = figure(row, "startup", "median_ms", ".2f")
        kinds = {c.reply_kind() for m in ("pingpong", "pipelined", "startup")
                 if (c := cells.get(row + (m,)))} - {None}
        out.append(f"| {' | '.join(row)} | {p50} | {p99} | {rps} | {start} | "
                   f"{'/'.join(sorted(kinds)) or '—'} |")

    def ratio(a, b):
        return None if a is None or b is None or b == 0 else a / b

    for server in sorted({r[0] for r in rows} - {"null"}, key=lambda s: SERVER_ORDER.get(s, 9)):
        targets = server == "netmodel"  # the peers' ratios are context, not goals

        def judged(value, ok):
            text = fmt(value, ".2f")
            if targets and value is not None:
                text += " pass" if ok(value) else " **FAIL**"
            return text

        out.append(f"\n## {server} / null server (same request, transport and framing)\n")
        if targets:
            out.append(f"Targets: pipelined ≥ {PIPELINED_MIN_RATIO}×, ping-pong p50 ≤ "
                       f"{P50_MAX_RATIO}×, start-up to first answer ≤ {STARTUP_MAX_MS:g} ms.\n")
        out.append("| method | transport | framing | pipelined ratio | p50 ratio | start-up ms |")
        out.append("| --- | --- | --- | ---: | ---: | ---: |")
        for row in (r for r in rows if r[0] == server):
            null = ("null",) + row[1:]
            cols = [
                judged(ratio(values[row + ("rps",)], values.get(null + ("rps",))),
                       lambda v: v >= PIPELINED_MIN_RATIO),
                judged(ratio(values[row + ("p50",)], values.get(null + ("p50",))),
                       lambda v: v <= P50_MAX_RATIO),
                judged(values[row + ("startup",)], lambda v: v <= STARTUP_MAX_MS),
            ]
            out.append(f"| {' | '.join(row[1:])} | {' | '.join(cols)} |")

    failed = [r for r in runs if not clean(r)]
    if failed:
        out.append("\n## Failed runs\n")
        for r in failed:
            out.append(f"- {r.get('target')} {r.get('method')} {r.get('transport')} "
                       f"{r.get('framing')} {r.get('mode')}: status={r.get('status')} "
                       f"mismatches={r.get('mismatches')} malformed={r.get('malformed')}")
    print("\n".join(out))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
