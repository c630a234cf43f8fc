#!/usr/bin/env bash
# Install what the reproductions import, into one folder:
#
#   bash benchmarks/realbugs/repro/setup.sh SITE
#
# - every pinned release of ../bugs.jsonl, buggy and fixed, into SITE/<dist_dir>/
#   (the wheel for kind "wheel", the sdist for kind "sdist");
# - the small dependencies the reproductions need, into SITE/deps-<name>/.
# Everything goes in with `pip install --no-deps --target`; torch, numpy, jax, scipy and
# the other packages of the interpreter are used as they are. The interpreter is
# $PYTHON (default python3 on the PATH); it must be the one that runs the
# reproductions, since some dependencies are binary wheels. Nothing is installed into
# that interpreter's environment or into the repository. A folder that was installed
# completely before (marker SITE/<folder>/.installed) is skipped.
set -euo pipefail

SITE=${1:?usage: setup.sh SITE}
PY=${PYTHON:-python3}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUGS="$HERE/../bugs.jsonl"
mkdir -p "$SITE"
SITE=$(cd "$SITE" && pwd -P)

# refuse a SITE inside the repository or inside the interpreter's environment
REPO=$(cd "$HERE/../../.." && pwd -P)
PREFIX=$("$PY" -c 'import os, sys; print(os.path.realpath(sys.prefix))')
case "$SITE/" in
  "$REPO"/*|"$PREFIX"/*) echo "setup.sh: refusing to install into $SITE (inside $REPO or $PREFIX)" >&2; exit 2 ;;
esac

inst() {  # inst FOLDER PIP-ARGS...
  local dir="$SITE/$1"; shift
  [ -f "$dir/.installed" ] && return 0
  rm -rf "$dir"
  echo ">> $(basename "$dir"): $*"
  "$PY" -m pip install --quiet --disable-pip-version-check --no-deps --target "$dir" "$@"
  touch "$dir/.installed"
}

# 1. the pinned releases (one folder per dist_dir; shared ones once)
while IFS='|' read -r spec kind dir; do
  case "$kind" in
    wheel) inst "$dir" --only-binary :all: "$spec" ;;
    sdist) inst "$dir" --no-binary :all: --no-build-isolation "$spec" ;;
    *) echo "unknown kind $kind for $spec" >&2; exit 1 ;;
  esac
done < <("$PY" - "$BUGS" <<'PYEOF'
import json, sys
seen = set()
for line in open(sys.argv[1], encoding="utf-8"):
    if line.strip():
        rec = json.loads(line)
        for side in ("buggy", "fixed"):
            s = rec[side]
            if s["dist_dir"] not in seen:
                seen.add(s["dist_dir"])
                print(f"{s['spec']}|{s['kind']}|{s['dist_dir']}")
PYEOF
)

# 2. dependencies (only what the interpreter lacks or needs in another version)
# shared by the transformers / diffusers / sentence-transformers reproductions
inst deps-common "einops==0.8.1" "importlib_metadata==8.7.0" "pillow==11.3.0" "regex==2025.11.3" \
  "tqdm==4.67.1" "safetensors==0.6.2" "joblib==1.5.2" "six==1.17.0"
# old Hugging Face stacks (transformers 4.10 - 4.34, diffusers 0.3 - 0.31)
inst deps-hfhub-0.16.4 "huggingface_hub==0.16.4"
inst deps-hfhub-0.25.2 "huggingface_hub==0.25.2"
inst deps-tokenizers-0.13.3 "tokenizers==0.13.3"
inst deps-tokenizers-0.14.1 "tokenizers==0.14.1"
inst deps-accelerate-0.14.0 "accelerate==0.14.0"
inst deps-sacremoses "sacremoses==0.1.1"
# transformers 4.37 - 4.42, peft 0.11/0.12, trl 0.8/0.9
inst deps-hf4-tok0.15 "tokenizers==0.15.2" "huggingface_hub==0.23.4" "safetensors==0.4.3" "accelerate==0.30.1"
inst deps-hf4-tok0.19 "tokenizers==0.19.1" "huggingface_hub==0.23.4" "safetensors==0.4.3" "accelerate==0.30.1"
inst deps-pandas "pandas==2.2.3" "pytz==2025.2"
# transformers 5.x
inst deps-hf5 "huggingface_hub==1.5.0" "tokenizers==0.23.1" "safetensors==0.8.0" "typer==0.20.0" \
  "httpx==0.28.1" "httpcore==1.0.9" "anyio==4.11.0" "h11==0.16.0" "sniffio==1.3.1" "shellingham==1.5.4" \
  "hf-xet==1.2.0"
# F2 reproductions
inst deps-catalyst "tensorboardX==2.6.4"
inst deps-torchio "Deprecated==1.2.18" "wrapt==1.17.3" "nibabel==5.3.2" "SimpleITK==2.5.2"
inst deps-onnx "onnx==1.16.2"
inst deps-sklearn "scikit-learn==1.7.2" "threadpoolctl==3.6.0"
inst deps-sbi "pyknos==0.11" "nflows==0.12" "pyro-ppl==1.9.1" "pyro-api==0.1.2" "matplotlib==3.10.6" \
  "contourpy==1.3.3" "cycler==0.12.1" "fonttools==4.60.1" "kiwisolver==1.4.9" "pyparsing==3.2.5" \
  "tensorboard==2.20.0" "tensorboard-data-server==0.7.2" "grpcio==1.75.1" "werkzeug==3.1.3"

echo "setup.sh: everything the reproductions import is under $SITE (export REALBUGS_SITE=$SITE)"
