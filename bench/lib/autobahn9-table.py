#!/usr/bin/env python3
"""The table of bench/websocket-autobahn9.sh: Autobahn 9.* case times, ours against a reference.

    autobahn9-table.py RUN_DIR REPEATS NGROUPS

Reads RUN_DIR/{ours,reference}-N/gG/reports/index.json (wstest's fuzzingclient reports,
one per server, round N = 1..REPEATS and case group G = 1..NGROUPS, in the order of
GROUPS below) and gG/cpu_ms (the server's CPU time over that run), and prints, per case
group, the median over rounds of the group's summed case durations (wstest's "duration",
ms, from the opening handshake's end to the TCP close) and of the server's CPU time, for
each server, with ratio = ours / reference. Writes each case's medians to
RUN_DIR/cases.txt. Lists every case that was not OK with a clean close in some round, and
exits 1 if there was one.
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


def load(run_dir, repeats, ngroups):
    """{agent: [ {case: (duration_ms, ok, why)} per round ]}, and
    {agent: [ [server CPU ms per group] per round ]}."""
    runs = {a: [] for a in AGENTS}
    cpu = {a: [] for a in AGENTS}
    for agent in AGENTS:
        for n in range(1, repeats + 1):
            cases, cpus = {}, []
            for g in range(1, ngroups + 1):
                d = os.path.join(run_dir, f"{agent}-{n}", f"g{g}")
                cpus.append(float(open(os.path.join(d, "cpu_ms")).read()))
                for per_agent in json.load(open(os.path.join(d, "reports", "index.json"))).values():
                    for case, r in per_agent.items():
                        ok = r["behavior"] == "OK" and r["behaviorClose"] in ("OK", "INFORMATIONAL")
                        why = f"{r['behavior']}, close {r['behaviorClose']}"
                        cases[case] = (r["duration"], ok, why)
            runs[agent].append(cases)
            cpu[agent].append(cpus)
    return runs, cpu


def fmt_ratio(ours, ref):
    return f"{ours / ref:.2f}" if ref else "-"


def main():
    run_dir, repeats, ngroups = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    runs, cpu = load(run_dir, repeats, ngroups)
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

    print(f"medians over {repeats} round(s): each group's summed case durations (wstest), and the")
    print("server's CPU time (its threads' run time) over the group's run, ms:")
    print()
    print("| case group | cases | ours | reference | ratio | ours CPU | reference CPU | CPU ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for i, (label, prefixes) in enumerate(GROUPS):
        members = [c for c in cases if c.startswith(prefixes)]
        if not members:
            continue
        # The last row, "all", takes every group's run.
        runs_of = range(ngroups) if i == len(GROUPS) - 1 else [i]
        med, med_cpu = [], []
        for agent in AGENTS:
            totals = [sum(r.get(c, (0,))[0] for c in members) for r in runs[agent]]
            med.append(statistics.median(totals))
            med_cpu.append(statistics.median(sum(r[g] for g in runs_of) for r in cpu[agent]))
        print(
            f"| {label} | {len(members)} | {med[0]:g} | {med[1]:g} | {fmt_ratio(*med)} "
            f"| {med_cpu[0]:.0f} | {med_cpu[1]:.0f} | {fmt_ratio(*med_cpu)} |"
        )
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
