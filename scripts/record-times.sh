#!/usr/bin/env bash
# Trims results directories of built-in scenarios to what the estimate test needs: per
# successful case its parameters (as typed) and how long it took (`case.duration`).
# app/plan/tests/estimates.rs checks every such case's estimate against its time.
#
#   bash scripts/record-times.sh /work/runs/soapstone /work/runs/proxy-ttfb ...
#   bash scripts/record-times.sh /tmp/ej-1200=s4-tigase.ejabberd-1200
#
# writes app/plan/tests/data/recorded/<scenario>.tsv for each directory, or
# <NAME>.tsv for DIR=NAME (a second run of a scenario beside the first: NAME must start
# with the scenario's name and a dot, which is how the test finds it). The first line says where the
# times come from (the command, the machine, the date); the second names the columns:
# case, seconds, then every parameter any case has, `-` where a case has none. Run the
# scenario as `wirebench run NAME` (flags that shorten it are fine: the file keeps each
# case's own parameters) on a quiet machine, then commit the files.
set -euo pipefail
case ${1:-} in
-h | --help)
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
esac
cd "$(dirname "$0")/.."
out=app/plan/tests/data/recorded
[ $# -gt 0 ] || { echo "usage: $0 RESULTS_DIR..." >&2; exit 2; }
command -v jq >/dev/null || { echo "$0: needs jq (apt-get install jq)" >&2; exit 2; }
mkdir -p "$out"
for arg in "$@"; do
    dir=${arg%%=*}
    results="$dir/results.jsonl"
    [ -f "$results" ] || { echo "$0: $dir: no results.jsonl" >&2; exit 2; }
    name=$(jq -r '.scenario' "$results" | head -n 1)
    if [ "$arg" != "$dir" ]; then
        case "${arg#*=}" in
            "$name".*) name=${arg#*=} ;;
            *) echo "$0: $arg: the name must start with $name." >&2; exit 2 ;;
        esac
    fi
    jq -rs '
        (map(.labels | keys_unsorted) | add | reduce .[] as $k ([]; if index([$k]) then . else . + [$k] end)) as $cols
        | (.[0]) as $first
        | "# \($first.scenario): \($first.command[1:] | join(" ")); \($first.host.cpus) x \($first.host.cpu); \($first.started[0:10]); wirebench \($first.wirebench)",
          (["case", "seconds"] + $cols | @tsv),
          (.[] | select(.status == "ok") | . as $r
             | [(.case | tostring), (.metrics["case.duration"].value * 1000 | round / 1000 | tostring)]
               + [$cols[] | ($r.labels[.] // "-" | tostring)]
             | @tsv)
    ' "$results" > "$out/$name.tsv"
    echo "$out/$name.tsv: $(($(wc -l < "$out/$name.tsv") - 2)) cases"
done
