#!/usr/bin/env bash
# Run every reproduction against its buggy and its fixed release.
#
#   bash benchmarks/realbugs/repro/run_all.sh SITE [ID ...]
#
# SITE is the folder given to setup.sh. Prints one line per run:
#   <id> <TAB> buggy|fixed <TAB> <exit status> <TAB> the BUG REPRODUCED / FIXED line
# and ends with a count of the runs that printed what they should (BUG REPRODUCED on
# the buggy release, FIXED on the fixed one). Exit status 1 when any did not.
set -uo pipefail

SITE=${1:?usage: run_all.sh SITE [ID ...]}; shift
PY=${PYTHON:-python3}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export REALBUGS_SITE=$(cd "$SITE" && pwd)
export PYTHONDONTWRITEBYTECODE=1   # keep __pycache__ out of the repository
TIMEOUT=${REPRO_TIMEOUT:-600}

if [ $# -gt 0 ]; then
  IDS=("$@")
else
  mapfile -t IDS < <("$PY" -c 'import json, sys
for line in open(sys.argv[1], encoding="utf-8"):
    if line.strip(): print(json.loads(line)["id"])' "$HERE/../bugs.jsonl")
fi

ok=0; total=0
for id in "${IDS[@]}"; do
  for side in buggy fixed; do
    out=$(cd "$HERE/.." && timeout "$TIMEOUT" "$PY" "repro/$id.py" "$side" 2>&1); rc=$?
    line=$(printf '%s\n' "$out" | grep -E '^(BUG REPRODUCED|FIXED):' | tail -n 1)
    [ -n "$line" ] || line="(no verdict) $(printf '%s\n' "$out" | tail -n 1)"
    printf '%s\t%s\t%s\t%s\n' "$id" "$side" "$rc" "$line"
    total=$((total + 1))
    case "$side:$line" in
      "buggy:BUG REPRODUCED:"*|"fixed:FIXED:"*) ok=$((ok + 1)) ;;
    esac
  done
done
echo "runs as expected: $ok / $total"
[ "$ok" = "$total" ]
