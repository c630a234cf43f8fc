#!/usr/bin/env python3
"""Run the linter over the real-bug benchmark and score it.

Usage:
    python benchmarks/realbugs/score.py --data DEST [--repo REPO] [--min-confidence LEVEL]
        [--list] [--json OUT] [--line-tolerance N] [--python PY] [--jobs N] [--id ID ...]

DEST   where fetch.sh unpacks the pinned releases; when a recorded file is missing there,
       fetch.sh DEST is run first (it needs pip and network access to PyPI).
REPO   the dtype-lint checkout to measure (default: the repository this script lives in);
       it is put first on PYTHONPATH of the linter's process.

For every bug the linter runs as a subprocess, once on the buggy file and once on the
fixed file, with the unpacked release as working directory (so the package's own
modules resolve) and an empty pyproject.toml as configuration:
    PYTHONPATH=REPO PY -m dtype_lint check --output-format json --exit-zero --no-cache
        --config <empty pyproject.toml> [--min-confidence LEVEL] <path>
--min-confidence is passed only when given (older linters do not know it).

A finding belongs to a family by its code: DTL1xx = F1, DTL2xx = F2, DTL3xx = F3.
  caught            some finding of the bug's family has |finding.line - L| <= N
                    for one of the recorded buggy lines L (N = --line-tolerance, 2);
  silent at fix     no finding of the bug's family has |finding.line - L| <= N for any
                    recorded fixed line L.
Prints per family: bugs, caught, caught %, silent at fix, silent %; with --list one line
per bug. --json OUT writes the per-bug results. Exit status 1 when a linter run failed.
Standard library only.
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BUGS = os.path.join(HERE, "bugs.jsonl")
FETCH = os.path.join(HERE, "fetch.sh")
FAMILIES = ("F1", "F2", "F3")
CODE_PREFIX = {"F1": "DTL1", "F2": "DTL2", "F3": "DTL3"}


def load_bugs(path):
    bugs = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    bugs.append(json.loads(line))
                except ValueError as e:
                    sys.exit(f"{path}:{n}: bad JSON: {e}")
    return bugs


def default_repo():
    try:
        out = subprocess.run(["git", "-C", HERE, "rev-parse", "--show-toplevel"],
                             capture_output=True, text=True, check=True).stdout.strip()
        if out:
            return out
    except (OSError, subprocess.CalledProcessError):
        pass
    return os.path.abspath(os.path.join(HERE, os.pardir, os.pardir))


def repo_revision(repo):
    try:
        rev = subprocess.run(["git", "-C", repo, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", repo, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return rev + ("+changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return None


def ensure_data(bugs, data):
    missing = [b for b in bugs for side in ("buggy", "fixed")
               if not os.path.isfile(os.path.join(data, b[side]["dist_dir"], b[side]["path"]))]
    if not missing:
        return
    print(f"{len(missing)} recorded file(s) missing under {data}; running fetch.sh", file=sys.stderr)
    rc = subprocess.run(["bash", FETCH, data]).returncode
    if rc != 0:
        sys.exit(f"fetch.sh {data} failed (exit {rc})")


def run_linter(py, repo, config, data, dist_dir, path, min_conf):
    cmd = [py, "-m", "dtype_lint", "check", "--output-format", "json", "--exit-zero",
           "--no-cache", "--config", config]
    if min_conf is not None:
        cmd += ["--min-confidence", min_conf]
    cmd.append(path)
    env = dict(os.environ)
    env["PYTHONPATH"] = repo + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.run(cmd, cwd=os.path.join(data, dist_dir), env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return None, f"exit {proc.returncode}: {proc.stderr.strip()[-400:]}"
    try:
        raw = json.loads(proc.stdout or "[]")
    except ValueError as e:
        return None, f"output is not JSON ({e}): {proc.stdout[:200]!r}"
    if isinstance(raw, dict) and isinstance(raw.get("findings"), list):
        raw = raw["findings"]
    want = os.path.normpath(path)
    findings = []
    for fd in raw:
        try:
            fpath = str(fd.get("path", path))
            if os.path.isabs(fpath):
                fpath = os.path.relpath(fpath, os.path.join(data, dist_dir))
            if os.path.normpath(fpath) != want:
                continue
            findings.append({"line": int(fd["line"]), "code": str(fd["code"])})
        except (KeyError, TypeError, ValueError):
            continue
    return findings, None


def near(findings, family, lines, tol):
    prefix = CODE_PREFIX[family]
    return sorted({(f["line"], f["code"]) for f in findings
                   if f["code"].startswith(prefix) and any(abs(f["line"] - n) <= tol for n in lines)})


def pct(a, b):
    return f"{100.0 * a / b:.0f}%" if b else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--data", required=True, help="folder of the unpacked releases (fetch.sh DEST)")
    ap.add_argument("--repo", default=None, help="dtype-lint checkout to run (default: this repository)")
    ap.add_argument("--min-confidence", default=None, metavar="LEVEL",
                    help="passed to the linter as --min-confidence (only when given)")
    ap.add_argument("--list", action="store_true", help="print one line per bug")
    ap.add_argument("--json", metavar="OUT", help="write the per-bug results as JSON")
    ap.add_argument("--line-tolerance", type=int, default=2, metavar="N",
                    help="a finding counts within N lines of a recorded line (default 2)")
    ap.add_argument("--python", default=sys.executable, help="interpreter that runs the linter")
    ap.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 1),
                    help="linter processes at a time")
    ap.add_argument("--id", action="append", default=[], help="score only these bug ids")
    args = ap.parse_args()

    repo = os.path.abspath(args.repo or default_repo())
    if not os.path.isdir(os.path.join(repo, "dtype_lint")):
        sys.exit(f"{repo} has no dtype_lint package")
    data = os.path.abspath(args.data)
    os.makedirs(data, exist_ok=True)
    bugs = load_bugs(BUGS)
    if args.id:
        unknown = set(args.id) - {b["id"] for b in bugs}
        if unknown:
            sys.exit(f"unknown bug id(s): {', '.join(sorted(unknown))}")
        bugs = [b for b in bugs if b["id"] in args.id]
    ensure_data(bugs, data)

    files = sorted({(b[side]["dist_dir"], b[side]["path"]) for b in bugs for side in ("buggy", "fixed")})
    results = {}
    with tempfile.TemporaryDirectory(prefix="realbugs-cfg-") as tmp:
        config = os.path.join(tmp, "pyproject.toml")
        open(config, "w").close()
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futs = {pool.submit(run_linter, args.python, repo, config, data, d, p, args.min_confidence): (d, p)
                    for d, p in files}
            for fut in concurrent.futures.as_completed(futs):
                results[futs[fut]] = fut.result()

    errors = {k: e for k, (_, e) in results.items() if e}
    tol = args.line_tolerance
    per_bug = []
    for b in bugs:
        fam = b["family"]
        row = {"id": b["id"], "family": fam, "pkg": b["pkg"],
               "buggy": b["buggy"]["spec"], "fixed": b["fixed"]["spec"]}
        for side, key in (("buggy", "caught"), ("fixed", "silent")):
            s = b[side]
            findings, err = results[(s["dist_dir"], s["path"])]
            if err:
                row[key] = None
                row[side + "_error"] = err
                continue
            hits = near(findings, fam, s["lines"], tol)
            row[side + "_near"] = [{"line": ln, "code": c} for ln, c in hits]
            row[side + "_findings_in_family"] = sum(1 for f in findings if f["code"].startswith(CODE_PREFIX[fam]))
            row[key] = bool(hits) if key == "caught" else not hits
        per_bug.append(row)

    rev = repo_revision(repo)
    print(f"linter: {repo}" + (f" ({rev})" if rev else "")
          + (f"   --min-confidence {args.min_confidence}" if args.min_confidence else "")
          + f"   line tolerance: {tol}")
    print()
    print(f"{'family':6s} {'bugs':>5s} {'caught':>7s} {'caught %':>9s} {'silent at fix':>14s} {'silent %':>9s}")
    summary = {}
    for fam in FAMILIES + ("all",):
        rows = [r for r in per_bug if fam == "all" or r["family"] == fam]
        if not rows:
            continue
        caught = sum(1 for r in rows if r["caught"])
        silent = sum(1 for r in rows if r["silent"])
        summary[fam] = {"bugs": len(rows), "caught": caught, "silent_at_fix": silent}
        print(f"{fam:6s} {len(rows):5d} {caught:7d} {pct(caught, len(rows)):>9s} {silent:14d} "
              f"{pct(silent, len(rows)):>9s}")

    if errors:
        print(f"linter runs that failed: {len(errors)} (their bugs count as not caught / not silent)")

    if args.list:
        print()
        w = max(len(r["id"]) for r in per_bug)

        def show(r, side, key):
            if r.get(side + "_error"):
                return "ERROR"
            near_ = ",".join(f"{h['code']}@{h['line']}" for h in r[side + "_near"])
            word = ("caught" if r[key] else "missed") if key == "caught" else ("silent" if r[key] else "flagged")
            return word + (f" ({near_})" if near_ else "")

        print(f"{'id':{w}s}  {'buggy release':38s}  {'fixed release':38s}")
        for r in per_bug:
            print(f"{r['id']:{w}s}  {show(r, 'buggy', 'caught'):38s}  {show(r, 'fixed', 'silent'):38s}")

    for (d, p), e in sorted(errors.items()):
        print(f"!! linter failed on {d}/{p}: {e}", file=sys.stderr)

    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"repo": repo, "revision": rev, "min_confidence": args.min_confidence,
                       "line_tolerance": tol, "summary": summary, "bugs": per_bug}, f, indent=2)
            f.write("\n")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
