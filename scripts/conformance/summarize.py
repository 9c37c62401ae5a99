#!/usr/bin/env python3
"""Counts and failing cases of one conformance suite's results, for scripts/conformance/*.sh.

    summarize.py unittest LOG [SKIPPED_NAME=REASON ...]   # a unittest -v run's output
    summarize.py autobahn INDEX_JSON                      # wstest's reports/index.json
                                                          # (AUTOBAHN_NO_ECHO=1: see autobahn_results)
    summarize.py h2spec JUNIT_XML                         # h2spec -j's report

Prints each failing case with a one-line reason read from the suite's own output, then
one closing line `SUITE: N passed, N failed, N skipped` (the form CI reads). Exits 0
when nothing failed, 1 otherwise.
"""

import json
import os
import re
import sys
import xml.etree.ElementTree as ET

WIDTH = 160


def one_line(text, width=WIDTH):
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def unittest_results(log, extra_skips):
    """Each test of a `python -m unittest -v`-style run: (id, verdict, reason)."""
    text = open(log, encoding="utf-8", errors="replace").read()
    verdicts = {}
    # "test_name (__main__.Class) ... ok", or with the test's docstring line between
    # (a test may also print before its verdict).
    for m in re.finditer(
        r"^(test\w*) \((?:[\w.]*\.)?(\w+)\)(?:\n[^\n]*?)? \.\.\. (?:.*?)(ok|FAIL|ERROR|skipped.*|expected failure|unexpected success)$",
        text,
        re.M,
    ):
        verdicts[f"{m.group(2)}.{m.group(1)}"] = m.group(3)
    reasons = {}
    sep = "=" * 70
    for block in text.split(sep)[1:]:
        head, _, rest = block.partition("\n" + "-" * 70 + "\n")
        m = re.match(r"\s*(FAIL|ERROR): (test\w*) \((?:[\w.]*\.)?(\w+)\)", head)
        if not m:
            continue
        lines = [l for l in rest.split("\n" + "-" * 70)[0].splitlines() if l.strip()]
        # The exception line, with the assertion's message if it spans lines.
        start = max(
            (i for i, l in enumerate(lines) if re.match(r"^\w[\w.]*(Error|Exception|Timeout|error)\b", l)),
            default=len(lines) - 1,
        )
        reasons[f"{m.group(3)}.{m.group(2)}"] = one_line(" ".join(lines[start:]))
    rows = []
    for case, v in verdicts.items():
        if v == "ok":
            rows.append((case, "passed", ""))
        elif v.startswith("skipped"):
            rows.append((case, "skipped", v[len("skipped") :].strip(" '")))
        else:
            rows.append((case, "failed", f"{v}: {reasons.get(case, '(no traceback)')}"))
    for s in extra_skips:
        name, _, why = s.partition("=")
        rows.append((name, "skipped", why))
    return rows


def autobahn_results(index):
    """Each case of wstest's fuzzingclient report: (id, verdict, reason). With
    AUTOBAHN_NO_ECHO=1 (an endpoint that does not echo, such as RFC 7395's), a case whose
    expected events include a message back, and every 9.* case, is skipped, whatever its
    verdict."""
    no_echo = os.environ.get("AUTOBAHN_NO_ECHO") == "1"
    data = json.load(open(index))
    base = os.path.dirname(index)
    rows = []
    for agent in data.values():
        for case in sorted(agent, key=lambda c: [int(p) for p in c.split(".")]):
            r = agent[case]
            b, close = r["behavior"], r["behaviorClose"]
            detail = {}
            try:
                detail = json.load(open(os.path.join(base, r["reportfile"])))
            except (OSError, ValueError, KeyError):
                pass
            # 9.* (performance) check their echoes in code, not in `expected`.
            echo = case.startswith("9.") or any(
                e[0] == "message" for es in detail.get("expected", {}).values() for e in es
            )
            if no_echo and echo:
                rows.append((case, "skipped", "expects an echo, and the endpoint carries XMPP (RFC 7395): it echoes nothing"))
            elif b == "UNIMPLEMENTED":
                rows.append((case, "skipped", "UNIMPLEMENTED: " + one_line(detail.get("result", ""))))
            elif b in ("OK", "NON-STRICT", "INFORMATIONAL") and close in ("OK", "INFORMATIONAL"):
                rows.append((case, "passed", b))
            else:
                why = f"{b} (close {close}, remote close code {r.get('remoteCloseCode')}): "
                why += detail.get("result", "")
                if close not in ("OK", "INFORMATIONAL"):
                    why += " / close: " + detail.get("resultClose", "")
                rows.append((case, "failed", one_line(why)))
    return rows


def h2spec_results(junit):
    """Each case of h2spec's JUnit report: (section + description, verdict, reason)."""
    rows = []
    for suite in ET.parse(junit).getroot().iter("testsuite"):
        n = 0
        for tc in suite.iter("testcase"):
            n += 1
            # h2spec numbers the cases of a section from 1 in its own output.
            case = f"{suite.get('package')}/{n} {tc.get('classname')}"
            bad = tc.find("failure")
            if bad is None:
                bad = tc.find("error")
            if tc.find("skipped") is not None:
                rows.append((case, "skipped", ""))
            elif bad is not None:
                rows.append((case, "failed", one_line(bad.text or "")))
            else:
                rows.append((case, "passed", ""))
    return rows


def main():
    kind, path, *rest = sys.argv[1:]
    rows = {
        "unittest": lambda: unittest_results(path, rest),
        "autobahn": lambda: autobahn_results(path),
        "h2spec": lambda: h2spec_results(path),
    }[kind]()
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for case, verdict, why in rows:
        counts[verdict] += 1
        if verdict == "failed":
            print(f"FAILED  {case}: {why}")
    # Skipped cases by reason: a list only when it is short.
    skipped = {}
    for case, verdict, why in rows:
        if verdict == "skipped":
            skipped.setdefault(why, []).append(case)
    for why, cases in skipped.items():
        names = ", ".join(cases) if len(cases) <= 8 else f"{cases[0]} ... {cases[-1]}"
        print(f"skipped {len(cases)} ({names}): {why}")
    if kind == "autobahn":
        by = {}
        for agent in json.load(open(path)).values():
            for r in agent.values():
                by[r["behavior"]] = by.get(r["behavior"], 0) + 1
        unclean = sum(
            1
            for agent in json.load(open(path)).values()
            for r in agent.values()
            if r["behaviorClose"] not in ("OK", "INFORMATIONAL") and r["behavior"] != "UNIMPLEMENTED"
        )
        print(
            "autobahn behaviour: "
            + ", ".join(f"{v} {k}" for k, v in sorted(by.items()))
            + f" (of {sum(by.values())}); closing handshake not clean in {unclean}"
        )
    name = os.environ.get("SUITE", kind)
    print(f"{name}: {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
