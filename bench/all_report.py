#!/usr/bin/env python3
"""bench/all.sh's folder of reports and raw lines → issue 30's one closing table.

usage: python3 bench/all_report.py [--command TEXT] [--commit REV] bench/results/all-<date>

Reads what each script wrote there (start.sh, run.sh, models.sh and http.sh raw lines;
held_bytes.py's and memory_shapes.py's output), with the scripts' own parsers where they
have one, and prints one markdown table: netmodel's figure, the peer's, the ratio and
the goal, row by row. Every figure is the median its script reports over its runs.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402  (bench/report.py: the loadgen lines' parser)
import start_report  # noqa: E402

PIPELINED_MIN = 0.8  # issue 30 §4
P50_MAX = report.P50_MAX_RATIO
HTTP_MIN = 0.8  # issue 30 §2


def one(folder: Path, pattern: str) -> Path | None:
    found = sorted(folder.glob(pattern))
    return found[-1] if found else None


def loadgen_cells(path: Path | None, part: str | None = None):
    """Medians of rps and p50_us per (target, method, transport, framing, mode)."""
    cells = defaultdict(list)
    meta = {}
    if path:
        meta, runs = report.parse(path)
        for run in runs:
            if part and run.get("part") != part:
                continue
            if "mode" in run and report.clean(run):
                cells[(run["target"], run["method"], run["transport"], run["framing"], run["mode"])].append(run)
    medians = {}
    for key, runs in cells.items():
        field = "rps" if key[4] == "pipelined" else "p50_us"
        medians[key] = statistics.median(float(r[field]) for r in runs)
    return meta, medians


def http_medians(path: Path | None):
    """per_second medians per (client, in flight) from http.sh's raw lines."""
    values = defaultdict(list)
    for line in open(path, encoding="utf-8") if path else []:
        parts = line.split(" ", 4)
        if line.startswith("#") or len(parts) < 4 or parts[2] != "0":
            continue
        values[(parts[0], int(parts[1]))].append(json.loads(parts[3])["per_second"])
    return {key: statistics.median(v) for key, v in values.items()}


def held_rows(path: Path | None):
    """(shape, bound) → ΔRSS MB from held_bytes.py's table."""
    rows = {}
    for line in open(path, encoding="utf-8") if path else []:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0] in ("page", "details"):
            rows[(cells[0], int(cells[1]))] = float(cells[2])
    return rows


def shape_cycles(path: Path | None):
    """memory_shapes.py's cycles: (peak − base, after − base) in MB."""
    cycles = []
    for line in open(path, encoding="utf-8") if path else []:
        words = line.split()
        if len(words) > 9 and words[1] == "cycle":
            base, peak, after = float(words[4]), float(words[6]), float(words[8])
            cycles.append((peak - base, after - base))
    return cycles


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", type=Path)
    parser.add_argument("--command", default="bash bench/all.sh")
    parser.add_argument("--commit", default="?")
    args = parser.parse_args()
    folder = args.folder

    rows: list[tuple[str, str, str, str, str, str]] = []

    def fmt(value: float | None, spec: str) -> str:
        return "—" if value is None else format(value, spec)

    def row(figure, ours, peer, theirs, spec, goal=None, higher_is_better=False, compared=True):
        ratio = ours / theirs if compared and ours is not None and theirs else None
        verdict = ""
        if ratio is not None and goal is not None:
            ok = ratio >= goal if higher_is_better else ratio <= goal
            verdict = " pass" if ok else " **FAIL**"
        goal_text = "" if goal is None else (f"≥ {goal:g}" if higher_is_better else f"≤ {goal:g}")
        ratio_text = fmt(ratio, ".2f") + verdict if compared else ""
        rows.append((figure, fmt(ours, spec), peer, fmt(theirs, spec), ratio_text, goal_text))

    # Start-up and per call (start.sh)
    start_raw = one(folder, "start-*.raw.txt")
    start_meta, times, _ = start_report.parse(str(start_raw)) if start_raw else ({}, {}, [])
    start = {target: statistics.median(v) for target, v in times.items()}
    for label, what in (("netmodel-tmpfs", "state on tmpfs"), ("netmodel-disk", "state on disk")):
        row(f"spawn → first answer ms, local backend, {what}", start.get(label), "Go peer", start.get("go"),
            ".2f", start_report.START_MAX_RATIO)
    row("spawn → first answer ms, REST backend", start.get("netmodel-rest"), "Go peer", start.get("go"), ".2f")
    row("spawn → first answer ms, local backend, state on tmpfs", start.get("netmodel-tmpfs"), "C null server",
        start.get("null"), ".2f")
    row("spawn → first answer ms, local backend, state on tmpfs", start.get("netmodel-tmpfs"),
        "clangd (unknown method, LSP)", start.get("clangd"), ".2f")
    row("per call ms, `netmodel call getFollowState` to a running server", start.get("call"),
        "socat, same request", start.get("socat"), ".2f", start_report.CALL_MAX_RATIO)

    # Pipelined and ping-pong: the cached read (models.sh), then an unknown method (run.sh)
    models_meta, cached = loadgen_cells(one(folder, "models-*.raw.txt"), part="rpc")
    for transport in ("stdio", "socket"):
        for framing in ("lsp", "ndjson"):
            key = ("getFollowState", transport, framing)
            row(f"pipelined req/s, cached `getFollowState`, {transport}, {framing}",
                cached.get(("netmodel",) + key + ("pipelined",)), "C null server",
                cached.get(("null",) + key + ("pipelined",)), ",.0f", PIPELINED_MIN, higher_is_better=True)
    for transport in ("stdio", "socket"):
        for framing in ("lsp", "ndjson"):
            key = ("getFollowState", transport, framing)
            row(f"ping-pong p50 µs, cached `getFollowState`, {transport}, {framing}",
                cached.get(("netmodel",) + key + ("pingpong",)), "C null server",
                cached.get(("null",) + key + ("pingpong",)), ".1f", P50_MAX)
    foundation_meta, unknown = loadgen_cells(one(folder, "foundation-*.raw.txt"))
    method = "netmodel/ping"
    peers = (("null", "C null server"), ("go", "Go peer"), ("clangd", "clangd"))
    for mode, what, spec in (("pipelined", "pipelined req/s", ",.0f"), ("pingpong", "ping-pong p50 µs", ".1f")):
        for transport, framing in (("stdio", "lsp"), ("stdio", "ndjson"), ("socket", "lsp"), ("socket", "ndjson")):
            ours = unknown.get(("netmodel", method, transport, framing, mode))
            for peer, name in peers:
                theirs = unknown.get((peer, method, transport, framing, mode))
                if theirs is None:
                    continue
                goal = (PIPELINED_MIN if mode == "pipelined" else P50_MAX) if peer == "null" else None
                row(f"{what}, unknown method, {transport}, {framing}", ours, name, theirs, spec, goal,
                    higher_is_better=mode == "pipelined")

    # HTTP (http.sh)
    http = http_medians(one(folder, "http-*.raw.txt"))
    for k in (1, 16, 64):
        row(f"REST round trips/s, {k} in flight (`getFollowState`, one GET each)", http.get(("netmodel", k)),
            "bare libcurl-multi loop", http.get(("httpserver", k)), ",.0f", HTTP_MIN, higher_is_better=True)

    # RSS (held_bytes.py, memory_shapes.py)
    held = held_rows(one(folder, "held.txt"))
    bound = max((b for _, b in held), default=16 << 20)
    for shape, what in (("page", "one list page of 200,000 tiny items"),
                        ("details", "30 details of 1.3 MB, shown then released")):
        row(f"ΔRSS MB, {what}, --max-held-bytes {bound >> 20} MiB", held.get((shape, bound)),
            "the same binary, no bound (0)", held.get((shape, 0)), ".1f", compared=False)
    cycles = shape_cycles(one(folder, "shapes.txt"))
    if cycles:
        last = cycles[-1]
        rows.append(("ΔRSS MB, 100,000 entities read (`getFollowState`), at the peak / after eviction, "
                     f"cycle {len(cycles)} of {len(cycles)}", f"{last[0]:.1f} / {last[1]:.1f}", "", "", "", ""))

    load = (start_meta.get("load_before") or foundation_meta.get("load_before") or "?")
    print(f"# Issue 30, the closing table — {foundation_meta.get('date') or models_meta.get('date') or '?'}\n")
    print("```sh")
    print(args.command)
    print("```\n")
    print(f"Commit {args.commit}, binary `{os.path.relpath(start_meta.get('netmodel', 'netmodel'))}`; "
          f"{foundation_meta.get('cpu', '?')}, {foundation_meta.get('cores', '?')} cores, Linux "
          f"{foundation_meta.get('kernel', '?')}; load average {load} at the start. Each figure is the median "
          f"its script reports (start.sh: {start_meta.get('runs', '?')} rounds; run.sh, models.sh, http.sh: "
          f"{foundation_meta.get('runs', '?')} repetitions; held_bytes.py: its runs). The scripts' own reports "
          f"and raw lines: `{folder}/`.\n")
    print("| figure | netmodel | peer | peer's figure | netmodel ÷ peer | goal |")
    print("| --- | ---: | --- | ---: | ---: | --- |")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
