#!/usr/bin/env python3
"""The table of bench/websocket-autobahn9.sh: Autobahn 9.* case times, ours against a reference.

    autobahn9-table.py RUN_DIR REPEATS

Reads RUN_DIR/{ours,reference}-N/reports/index.json (wstest's fuzzingclient reports, one
per server and round, N = 1..REPEATS) and prints, per case group, the median over rounds
of the group's summed case durations (wstest's "duration", ms, from the opening
handshake's end to the TCP close) for each server, and ratio = ours / reference. Writes
each case's medians to RUN_DIR/cases.txt. Lists every case that was not OK with a clean
close in some round, and exits 1 if there was one.
"""

import json
import os
import statistics
import sys

AGENTS = ("ours", "reference")
# (label, case-id prefixes), in the order of the suite.
GROUPS = [
    ("9.1 text", ("9.1.",)),
    ("9.2 binary", ("9.2.",)),
    ("9.3 fragmented text", ("9.3.",)),
    ("9.4 fragmented binary", ("9.4.",)),
    ("9.5/9.6 chopped", ("9.5.", "9.6.")),
    ("9.7/9.8 round trips", ("9.7.", "9.8.")),
    ("all", ("9.",)),
]


def case_key(case):
    return [int(p) for p in case.split(".")]


def load(run_dir, repeats):
    """{agent: [ {case: (duration_ms, ok, why)} per round ]}."""
    runs = {a: [] for a in AGENTS}
    for agent in AGENTS:
        for n in range(1, repeats + 1):
            index = os.path.join(run_dir, f"{agent}-{n}", "reports", "index.json")
            cases = {}
            for per_agent in json.load(open(index)).values():
                for case, r in per_agent.items():
                    ok = r["behavior"] == "OK" and r["behaviorClose"] in ("OK", "INFORMATIONAL")
                    why = f"{r['behavior']}, close {r['behaviorClose']}"
                    cases[case] = (r["duration"], ok, why)
            runs[agent].append(cases)
    return runs


def fmt_ratio(ours, ref):
    return f"{ours / ref:.2f}" if ref else "-"


def main():
    run_dir, repeats = sys.argv[1], int(sys.argv[2])
    runs = load(run_dir, repeats)
    cases = sorted(set().union(*(r.keys() for rs in runs.values() for r in rs)), key=case_key)

    bad = []
    for agent in AGENTS:
        for n, r in enumerate(runs[agent], 1):
            for case in cases:
                if case not in r:
                    bad.append(f"{agent} round {n}: {case} missing")
                elif not r[case][1]:
                    bad.append(f"{agent} round {n}: {case} {r[case][2]} ({r[case][0]} ms)")

    with open(os.path.join(run_dir, "cases.txt"), "w") as f:
        f.write("case\tours_ms\treference_ms\tratio\t(median of each over rounds)\n")
        for case in cases:
            med = [
                statistics.median(r[case][0] for r in runs[a] if case in r) for a in AGENTS
            ]
            f.write(f"{case}\t{med[0]:g}\t{med[1]:g}\t{fmt_ratio(*med)}\n")

    print(f"median over {repeats} round(s) of each group's summed case durations, ms:")
    print()
    print("| case group | cases | ours, ms | reference, ms | ratio ours/reference |")
    print("|---|---:|---:|---:|---:|")
    for label, prefixes in GROUPS:
        members = [c for c in cases if c.startswith(prefixes)]
        if not members:
            continue
        med = []
        for agent in AGENTS:
            totals = [sum(r.get(c, (0,))[0] for c in members) for r in runs[agent]]
            med.append(statistics.median(totals))
        print(f"| {label} | {len(members)} | {med[0]:g} | {med[1]:g} | {fmt_ratio(*med)} |")
    print()
    print(f"each case's medians: {os.path.join(run_dir, 'cases.txt')}")
    if bad:
        print(f"{len(bad)} case run(s) not OK with a clean close (their times measure a failure):")
        for b in bad:
            print("  " + b)
        return 1
    print("every case OK with a clean close against both servers in every round")
    return 0


if __name__ == "__main__":
    sys.exit(main())
