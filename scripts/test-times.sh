#!/usr/bin/env bash
# The table of docs/testing.md: each test binary's tests, their summed time and its
# longest test, from the log scripts/test.sh keeps of its last run (target/test-suite.log),
# then the modules of the e2e binary the same way, longest first.
#
#   bash scripts/test.sh && bash scripts/test-times.sh     # after a run of the suite
#   bash scripts/test-times.sh LOG                         # from another run's log
#   bash scripts/test-times.sh --help                      # this text
#
# Tests run four at a time (.config/nextest.toml), so a binary's summed time is the time
# its tests held a slot, not the wall time it added; the suite's wall time is nextest's
# Summary line, printed last.
set -euo pipefail

case ${1:-} in
-h | --help)
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
esac
cd "$(dirname "$0")/.."
log=${1:-${CARGO_TARGET_DIR:-target}/test-suite.log}
[[ -f $log ]] || {
    echo "test-times.sh: no $log (run bash scripts/test.sh first, or name a log)" >&2
    exit 2
}

# nextest's result lines: `PASS [   1.234s] ( 26/901) wirebench::e2e cli::name`.
table() {
    awk -v by="$1" '
        match($0, /^ *(PASS|FAIL|TIMEOUT|FLAKY|SIGSEGV|ABORT)[^[]*\[ *[0-9.]+s\]/) {
            t = $0; sub(/^[^[]*\[ */, "", t); sub(/s\].*/, "", t); t += 0
            rest = $0; sub(/^[^)]*\) */, "", rest)
            split(rest, f, " "); bin = f[1]; test = f[2]
            key = bin
            if (by == "module") {
                if (bin != "wirebench::e2e") next
                key = test; sub(/::.*/, "", key)
            }
            # A failure is listed again at the end: count each test once, its last line.
            seen[bin " " test] = t; keyof[bin " " test] = key
        }
        END {
            for (id in seen) {
                key = keyof[id]; t = seen[id]; split(id, f, " ")
                n[key]++; sum[key] += t
                if (t > max[key]) { max[key] = t; slow[key] = f[2] }
            }
            for (k in n) printf "%s\t%d\t%.0f\t%.0f\t%s\n", k, n[k], sum[k], max[k], slow[k]
        }' "$log" | sort -t $'\t' -k3,3nr |
        awk -F '\t' -v head="$2" 'BEGIN { print "| " head " | tests | summed s | longest s | longest test |"; print "|---|---:|---:|---:|---|" }
            { printf "| `%s` | %d | %d | %d | `%s` |\n", $1, $2, $3, $4, $5 }'
}
table binary "binary"
echo
table module "e2e module"
echo
grep -E '^ *Summary \[' "$log" | tail -n 1 | sed 's/^ *//'
