#!/usr/bin/env python3
"""bench/start.sh's raw lines → markdown: the median of every start-up figure over the
rounds, and the ratios of issue 30's goals.

    python3 bench/start_report.py bench/results/start-<date>.raw.txt
"""

from __future__ import annotations

import statistics
import sys

START_MAX_RATIO = 2.0  # spawn → first answer, netmodel ÷ the Go peer
CALL_MAX_RATIO = 1.3  # `netmodel call` ÷ socat, per call

DESCRIPTIONS = {
    "null": "C null server (`nullserver.c`), stdio",
    "go": "Go standard-library peer (`goserver.go`), stdio",
    "netmodel-tmpfs": "netmodel, local backend, state on tmpfs",
    "netmodel-disk": "netmodel, local backend, state on disk",
    "netmodel-rest": "netmodel, REST backend (`examples/artsy/config.json`)",
    "baseline-tmpfs": "baseline, local backend, state on tmpfs",
    "baseline-disk": "baseline, local backend, state on disk",
    "baseline-rest": "baseline, REST backend",
    "clangd": "clangd (unknown method before `initialize`), LSP framing",
    "call": "`netmodel call getFollowState kind=artist id=banksy`",
    "socat": "`socat - UNIX-CONNECT:` with the same request, same server",
    "baseline-call": "baseline `netmodel call`, same request",
    "baseline-socat": "socat to the baseline's server",
    "help": "`netmodel --help`",
    "version": "`netmodel --version`",
    "baseline-help": "baseline `netmodel --help`",
    "true": "`/bin/true` (the cost of a spawn)",
}


def parse(path: str):
    meta: dict[str, str] = {}
    times: dict[str, list[float]] = {}
    failed: list[str] = []
    for line in open(path, encoding="utf-8"):
        line = line.strip()
        if line.startswith("#"):
            for field in line[1:].split():
                if "=" in field:
                    key, value = field.split("=", 1)
                    meta[key] = value
            if line.startswith("# needed="):
                meta["needed"] = line[len("# needed="):]
            continue
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        target = fields.get("target")
        if not target:
            continue
        ok = fields.get("status", "ok") == "ok" and fields.get("failures", "0") == "0" and fields.get("runs") != "0"
        if not ok:
            failed.append(line)
            continue
        times.setdefault(target, []).append(float(fields["median_ms"]))
    return meta, times, failed


def main() -> int:
    meta, times, failed = parse(sys.argv[1])
    med = {target: statistics.median(values) for target, values in times.items()}
    out = [f"# Start-up — {meta.get('date', '?')}\n"]
    out.append(
        f"Commit {meta.get('commit', '?')}, `{meta.get('netmodel', '?')}` ({int(meta.get('size', 0)) / 1e6:.1f} MB), "
        f"{meta.get('cpus', '?')} CPUs, load average {meta.get('load_before', '?')} before and "
        f"{meta.get('load_after', '?')} after. Medians of {meta.get('runs', '?')} interleaved rounds "
        "(`bash bench/start.sh`).\n")
    out.append(f"Libraries the binary names (NEEDED): {meta.get('needed', '?')}\n")
    out.append("| what | median ms | min | max | runs |")
    out.append("| --- | ---: | ---: | ---: | ---: |")
    for target in DESCRIPTIONS:
        if target in times:
            values = times[target]
            out.append(f"| {DESCRIPTIONS[target]} | {med[target]:.2f} | {min(values):.2f} | {max(values):.2f} "
                       f"| {len(values)} |")
    out.append("")
    out.append(f"Goals: spawn → first answer ≤ {START_MAX_RATIO:g}× the Go peer; `netmodel call` ≤ "
               f"{CALL_MAX_RATIO:g}× socat.\n")
    out.append("| ratio | median | goal | |")
    out.append("| --- | ---: | ---: | --- |")

    def ratio(name: str, top: str, bottom: str, goal: float | None) -> None:
        if top not in med or bottom not in med or med[bottom] <= 0:
            return
        value = med[top] / med[bottom]
        verdict = "" if goal is None else ("pass" if value <= goal else "**FAIL**")
        out.append(f"| {name} | {value:.2f} | {'' if goal is None else f'≤ {goal:g}'} | {verdict} |")

    ratio("netmodel (tmpfs) ÷ Go", "netmodel-tmpfs", "go", START_MAX_RATIO)
    ratio("netmodel (disk) ÷ Go", "netmodel-disk", "go", START_MAX_RATIO)
    ratio("netmodel REST ÷ Go", "netmodel-rest", "go", None)
    ratio("netmodel (tmpfs) ÷ null", "netmodel-tmpfs", "null", None)
    ratio("`netmodel call` ÷ socat", "call", "socat", CALL_MAX_RATIO)
    ratio("baseline (tmpfs) ÷ Go", "baseline-tmpfs", "go", START_MAX_RATIO)
    ratio("baseline (disk) ÷ Go", "baseline-disk", "go", START_MAX_RATIO)
    ratio("baseline `call` ÷ socat", "baseline-call", "baseline-socat", CALL_MAX_RATIO)
    ratio("netmodel ÷ baseline, tmpfs", "netmodel-tmpfs", "baseline-tmpfs", None)
    ratio("netmodel ÷ baseline, REST", "netmodel-rest", "baseline-rest", None)
    ratio("`--help`: netmodel ÷ baseline", "help", "baseline-help", None)
    if failed:
        out.append("\nFailed runs (left out of the medians):\n")
        out.extend(f"    {line}" for line in failed)
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
