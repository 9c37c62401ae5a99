#!/usr/bin/env bash
# The docs' wirebench commands in a form that measures nothing, run by two binaries and
# compared: what a change that should change no behaviour (a reshaping) must leave as it
# was. Each `wirebench run` line of README.md and docs/*.md runs as --dry-run (the plan,
# its estimate and the prerequisites it reports), the listing commands (scenarios, links,
# protocols) as written, and --help of every subcommand they use; each in a fresh empty
# directory with the binary first on PATH as `wirebench`, as the docs test runs them.
#
#   scripts/docs-outputs.sh OLD_BINARY NEW_BINARY [OUT]   (OUT default: a new temp dir)
#
# Prints each command whose output differs, with the first lines of the difference
# (temporary paths aside); the outputs stay in OUT/old and OUT/new. A binary built from
# another commit looks for the peers beside itself or in its own source tree: their
# "needs what this machine lacks" lines differ by where it was built, not by behaviour.
set -euo pipefail
case ${1:-} in
-h | --help | "")
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
esac
OLD=$(realpath "$1")
NEW=$(realpath "$2")
OUT=${3:-$(mktemp -d /tmp/wirebench-docs-outputs.XXXXXX)}
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
cd "$(dirname "$0")/.."
python3 scripts/lib/docs-commands.py >"$OUT/commands.txt"
run_all() { # BINARY DIR
    mkdir -p "$2"
    local n=0 c d
    while IFS= read -r c; do
        n=$((n + 1))
        d=$(mktemp -d)
        mkdir "$d/bin"
        ln -s "$1" "$d/bin/wirebench"
        (cd "$d" && PATH="$d/bin:$PATH" timeout 60 bash -c "$c" >"$2/$n.out" 2>&1; echo "rc=$?" >>"$2/$n.out") || true
        sed -i "1i \$ $c" "$2/$n.out"
        rm -rf "$d"
    done <"$OUT/commands.txt"
}
run_all "$OLD" "$OUT/old"
run_all "$NEW" "$OUT/new"
norm() { sed -E 's#/tmp/tmp\.[A-Za-z0-9]+#/TMP#g' "$1"; }
same=0 differ=0
for f in "$OUT"/new/*.out; do
    n=$(basename "$f")
    if diff -q <(norm "$OUT/old/$n") <(norm "$f") >/dev/null; then
        same=$((same + 1))
    else
        differ=$((differ + 1))
        echo "== $(head -1 "$f")"
        diff <(norm "$OUT/old/$n") <(norm "$f") | sed -n '2,9p'
    fi
done
echo "docs-outputs: $same commands alike, $differ differ; outputs in $OUT"
