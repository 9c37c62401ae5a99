"""The table bench/tsung.sh and bench/mqtt-load.sh print: Tsung's figures beside
wirebench's, each generator's memory and CPU per session, and their ratios."""


def per_session(g, done):
    """Adds memory per session held, sessions per GiB and CPU per session `done` (the
    count of sessions that got as far as the comparison counts) to generator `g`."""
    g["kib_per_session"] = g["rss_kib"] / g["held"] if g["held"] else float("nan")
    g["per_gib"] = g["held"] / (g["rss_kib"] / 1048576) if g["rss_kib"] else 0
    g["us_per_session"] = g["cpu"] / g[done] * 1e6 if g[done] else float("nan")


def div(a, b):
    return a / b if b else float("nan")


def row(name, a, b, fmt, ratio=None):
    r = "" if ratio is None else f"{ratio:.2f}x"
    print(f"  {name:<38} {fmt.format(a):>14} {fmt.format(b):>14} {r:>8}")


def header():
    print(f"  {'':<38} {'Tsung':>14} {'wirebench':>14} {'ratio':>8}")


def costs(t, w, per_gib_name="  sessions per GiB"):
    """The generator rows: processes, memory (per session, per GiB), CPU per session."""
    row("generator processes", t["procs"], w["procs"], "{:,.0f}")
    row("generator memory at peak (MiB)", t["rss_kib"] / 1024, w["rss_kib"] / 1024, "{:,.1f}")
    row("  per session held (KiB)", t["kib_per_session"], w["kib_per_session"], "{:,.2f}",
        div(t["kib_per_session"], w["kib_per_session"]))
    row(per_gib_name, t["per_gib"], w["per_gib"], "{:,.0f}", div(w["per_gib"], t["per_gib"]))
    row("generator CPU per session (us)", t["us_per_session"], w["us_per_session"], "{:,.0f}",
        div(t["us_per_session"], w["us_per_session"]))
