#!/usr/bin/env python3
"""Memory and CPU of a group of processes, sampled until told to stop.

    proc-usage.py TAG OUT [SKIP]

The group: every process whose environment holds WB_BENCH_TAG=TAG (the benchmark sets it
on the command it runs; children inherit it, including Tsung's detached Erlang VMs, which
a process tree would miss). Every 0.5 s it reads /proc/PID/stat and status of each, and
on SIGTERM or SIGINT writes OUT as JSON. SKIP, when given, is a command name
(/proc/PID/comm) left out of the group: a server the measured generator starts itself,
such as the Mosquitto of a wirebench MQTT load, is not the generator's cost.

    peak_rss_kib   highest sum of the group's resident memory seen in one sample
    cpu_s          user + system CPU, summed over every process seen (the last reading of
                   each; a process's last half second before it exits can be missed)
    processes      how many distinct processes were seen
    samples        how many samples were taken
"""
import json
import os
import signal
import sys
import time

TAG, OUT = sys.argv[1], sys.argv[2]
SKIP = sys.argv[3].encode() if len(sys.argv) > 3 else None
MARK = b"WB_BENCH_TAG=" + TAG.encode()
TICK = os.sysconf("SC_CLK_TCK")
PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024

stop = False


def on_signal(*_):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_signal)
signal.signal(signal.SIGINT, on_signal)

members = {}  # pid -> start time, so a reused PID is not mistaken for a member
cpu = {}  # (pid, start) -> CPU seconds at the last reading
peak = 0
samples = 0


def stat(pid):
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    # After the command name: state is field 3, utime 14, stime 15, starttime 22, rss 24.
    utime, stime, start, rss = (int(fields[i - 3]) for i in (14, 15, 22, 24))
    return (utime + stime) / TICK, start, rss * PAGE_KIB


while not stop:
    total = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        try:
            if pid not in members:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    if MARK not in f.read().split(b"\0"):
                        continue
                if SKIP is not None:
                    with open(f"/proc/{pid}/comm", "rb") as f:
                        if f.read().strip() == SKIP:
                            continue
            c, start, rss = stat(pid)
        except (OSError, IndexError, ValueError):
            continue
        if members.setdefault(pid, start) != start:
            members.pop(pid)
            continue
        cpu[(pid, start)] = c
        total += rss
    peak = max(peak, total)
    samples += 1
    time.sleep(0.5)

with open(OUT, "w") as f:
    json.dump(
        {
            "peak_rss_kib": peak,
            "cpu_s": round(sum(cpu.values()), 3),
            "processes": len(cpu),
            "samples": samples,
        },
        f,
    )
