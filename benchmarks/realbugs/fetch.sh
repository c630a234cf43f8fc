#!/usr/bin/env bash
# Fetch the pinned releases of the real-bug benchmark from PyPI.
#
#   bash benchmarks/realbugs/fetch.sh DEST
#
# For every record of bugs.jsonl (next to this script) both the buggy and the fixed
# release are downloaded with `pip download --no-deps` (the wheel or the sdist, as the
# record's "kind" says), their sha256 is compared with the record, and the archive is
# unpacked so that DEST/<dist_dir>/<path> is the file the record points at:
#   wheel: unzipped into DEST/<dist_dir>/ (paths start at the import package)
#   sdist: untarred into DEST/, its top folder being <dist_dir>
# Archives are kept in DEST/_downloads. An archive already there with the right
# sha256 is not downloaded again; a dist_dir already unpacked from the same archive
# (marker in DEST/_unpacked/) is left as it is.
#
# By default the downloads go through a throwaway virtualenv DEST/_venv with a pinned
# pip (23.2.1) and setuptools (68.2.2): sdist metadata is prepared without build
# isolation, and a pinned pip keeps old metadata from being refused by a newer one.
# FETCH_USE_SYSTEM_PIP=1 uses `$PYTHON -m pip` as it is instead (PYTHON defaults to
# python3). Only PyPI is contacted, through pip; nothing is installed outside DEST.
set -euo pipefail

DEST=${1:?usage: fetch.sh DEST}
mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUGS=${BUGS_JSONL:-$HERE/bugs.jsonl}
PY=${PYTHON:-python3}
DL="$DEST/_downloads"
MARK="$DEST/_unpacked"
mkdir -p "$DL" "$MARK"

if [ "${FETCH_USE_SYSTEM_PIP:-0}" = "1" ]; then
  PIPPY="$PY"
else
  VENV="$DEST/_venv"
  if [ ! -x "$VENV/bin/python" ] || [ ! -f "$VENV/.pins-ok" ]; then
    "$PY" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
      "pip==23.2.1" "setuptools==68.2.2" "wheel==0.41.2"
    touch "$VENV/.pins-ok"
  fi
  PIPPY="$VENV/bin/python"
fi

sha_of() { "$PY" -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$1"; }

# One line per distinct archive: spec|kind|archive|sha256|dist_dir
mapfile -t ENTRIES < <("$PY" - "$BUGS" <<'PYEOF'
import json, sys
seen = {}
for n, line in enumerate(open(sys.argv[1], encoding="utf-8"), 1):
    if not line.strip():
        continue
    rec = json.loads(line)
    for side in ("buggy", "fixed"):
        s = rec[side]
        entry = (s["spec"], s["kind"], s["archive"], s["sha256"], s["dist_dir"])
        old = seen.get(s["archive"])
        if old is not None and old != entry:
            sys.exit(f"bugs.jsonl line {n}: archive {s['archive']} recorded twice with different fields")
        if old is None:
            seen[s["archive"]] = entry
            print("|".join(entry))
PYEOF
)

failed=0
for e in "${ENTRIES[@]}"; do
  IFS='|' read -r spec kind file sha dir <<<"$e"
  got=""
  if [ -f "$DL/$file" ]; then
    got=$(sha_of "$DL/$file")
    if [ "$got" != "$sha" ]; then
      echo "!! $DL/$file has the wrong sha256; downloading it again" >&2
      rm -f "$DL/$file"; got=""
    fi
  fi
  if [ ! -f "$DL/$file" ]; then
    echo ">> downloading $spec ($kind)"
    case "$kind" in
      wheel) "$PIPPY" -m pip download --quiet --disable-pip-version-check --no-deps \
               --ignore-requires-python --only-binary :all: -d "$DL" "$spec" || true ;;
      sdist) "$PIPPY" -m pip download --quiet --disable-pip-version-check --no-deps \
               --ignore-requires-python --no-binary :all: --no-build-isolation -d "$DL" "$spec" || true ;;
      *) echo "!! unknown kind '$kind' for $spec" >&2; failed=1; continue ;;
    esac
  fi
  if [ ! -f "$DL/$file" ]; then
    echo "!! expected $DL/$file after downloading $spec" >&2; failed=1; continue
  fi
  [ -n "$got" ] || got=$(sha_of "$DL/$file")
  if [ "$got" != "$sha" ]; then
    echo "!! sha256 mismatch for $file: got $got, want $sha" >&2; failed=1; continue
  fi
  if [ -d "$DEST/$dir" ] && [ "$(cat "$MARK/$dir" 2>/dev/null)" = "$sha" ]; then
    continue
  fi
  rm -rf "${DEST:?}/$dir"
  case "$kind" in
    wheel) "$PY" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
             "$DL/$file" "$DEST/$dir" ;;
    sdist) tar -xzf "$DL/$file" -C "$DEST" ;;
  esac
  if [ ! -d "$DEST/$dir" ]; then
    echo "!! $DEST/$dir missing after unpacking $file" >&2; failed=1; continue
  fi
  echo "$sha" > "$MARK/$dir"
  echo "   unpacked -> $DEST/$dir"
done

# Every recorded file must exist and every recorded line must be a non-empty line of it.
"$PY" - "$BUGS" "$DEST" <<'PYEOF' || failed=1
import json, os, sys
bugs, dest = sys.argv[1], sys.argv[2]
bad = 0
for line in open(bugs, encoding="utf-8"):
    if not line.strip():
        continue
    rec = json.loads(line)
    for side in ("buggy", "fixed"):
        s = rec[side]
        p = os.path.join(dest, s["dist_dir"], s["path"])
        if not os.path.isfile(p):
            print(f"!! {rec['id']} {side}: missing {p}", file=sys.stderr); bad = 1; continue
        text = open(p, encoding="utf-8", errors="replace").read().splitlines()
        for n in s["lines"]:
            if not (1 <= n <= len(text)) or not text[n - 1].strip():
                print(f"!! {rec['id']} {side}: line {n} of {p} is empty or out of range", file=sys.stderr); bad = 1
sys.exit(bad)
PYEOF
[ "$failed" = 0 ] || { echo "fetch.sh: some archives or files are not right (see above)" >&2; exit 1; }
echo "all $(( ${#ENTRIES[@]} )) archives fetched and every recorded file and line is present under $DEST"
