"""Shared helper of the reproductions: puts one pinned release on sys.path.

`setup.sh SITE` installs every pinned release of ../bugs.jsonl into SITE/<dist_dir>/
(the record's dist_dir, e.g. SITE/transformers-4.33.0) and the small dependencies the
reproductions need into SITE/deps-<name>/, each with `pip install --no-deps --target`.
The reproductions find SITE through the environment variable REALBUGS_SITE
(default /tmp/realbugs-site); torch, numpy, jax and the rest of the interpreter's own
packages come from the interpreter that runs the script.

A reproduction is run as `python repro/<id>.py [buggy|fixed|VERSION]`; `buggy` (the
default) and `fixed` are looked up in ../bugs.jsonl under the script's id.
"""
import importlib.util
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BUGS = os.path.join(HERE, os.pardir, "bugs.jsonl")
SITE = os.environ.get("REALBUGS_SITE", "/tmp/realbugs-site")


def _record(bug_id):
    with open(BUGS, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                rec = json.loads(line)
                if rec["id"] == bug_id:
                    return rec
    sys.exit(f"{bug_id} is not in {BUGS}")


def version():
    """The release to run against: argv[1] (or $REALBUGS_VERSION), default 'buggy'.

    'buggy' and 'fixed' become the versions pinned in the bug's record."""
    arg = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("REALBUGS_VERSION", "buggy")
    if arg in ("buggy", "fixed"):
        bug_id = os.path.splitext(os.path.basename(sys.argv[0]))[0]
        return _record(bug_id)[arg]["spec"].split("==", 1)[1]
    return arg


def _folder(name):
    path = os.path.join(SITE, name)
    if not os.path.isdir(path):
        sys.exit(f"missing {path}: run `bash repro/setup.sh {SITE}` first "
                 f"(or set REALBUGS_SITE to the folder you gave setup.sh)")
    return path


def use(dist, ver, *extra):
    """Put SITE/<dist>-<ver> and then the extra folders of SITE (other releases such as
    'transformers-4.41.2', or dependency folders 'deps-...') first on sys.path."""
    # keep the Hugging Face libraries off the TensorFlow / Flax code paths of this interpreter
    for key, value in (("USE_TORCH", "1"), ("USE_TF", "0"), ("USE_FLAX", "0"), ("USE_JAX", "0")):
        os.environ.setdefault(key, value)
    sys.path[:0] = [_folder(f"{dist}-{ver}")] + [_folder(e) for e in extra]
    return ver


def load_module(dist, ver, relpath, name):
    """Load one module file of a pinned release by path, without running its package's
    __init__ (used where that __init__ pulls in heavy dependencies)."""
    path = os.path.join(_folder(f"{dist}-{ver}"), relpath)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
