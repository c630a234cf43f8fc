"""Accuracy of dtype-lint on the labelled sets: precision and recall per hazard family, at
each confidence level, and the default level they choose.

    python benchmarks/accuracy.py                        # corpora a-d and set e, fetched once
    python benchmarks/accuracy.py --only d --list        # one set, every miss and false alarm
    python benchmarks/accuracy.py --sample 100 PKG_DIR   # random findings of whole packages

The team's corpora (``corpus/`` to ``corpus-d/``: ``fetch.sh``, ``files.txt``,
``labels.jsonl``) live outside the repository, in ``<repo>/../shared/``, and are called,
never copied; our own sets live in ``benchmarks/corpora/`` (labels and a fetch script, no
package code). Each set is linted once by the real CLI (``dtype-lint check --output-format
json --min-confidence low``, an empty configuration, no cache) and scored by
``scoring.py``'s rules: a finding within two lines of a label of its family, a benign label
or an unlabelled line of a labelled file a false alarm until an outside reader judges it
(``benchmarks/corpora/judged/<set>.jsonl``).

The findings are scored at ``low`` (the audit mode), ``medium`` and ``high``; the default
``min-confidence`` is the lowest level whose precision is at least 0.90 for every family
on every development set (``--choose-on``; a family with no finding there does not count
against a level).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import scoring  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
OURS = REPO / "benchmarks" / "corpora"
# name -> (the set's folder: files.txt, labels.jsonl; how to fetch it)
SETS = {
    "a": SHARED / "corpus",
    "b": SHARED / "corpus-b",
    "c": SHARED / "corpus-c",
    "d": SHARED / "corpus-d",
    "e": OURS / "set-e",
}
LEVELS = ("low", "medium", "high")
TARGET = 0.90


def ensure_fetched(folder: Path, dest: Path) -> None:
    """Fetch the set into ``dest`` unless every labelled file is already there."""
    if all((dest / f).is_file() for f in scoring.listed_files(folder)):
        return
    print(f"fetching {folder.name} into {dest} ...", file=sys.stderr)
    if (folder / "fetch.sh").is_file():
        subprocess.run(["bash", str(folder / "fetch.sh"), str(dest)], check=True)
    else:
        subprocess.run([sys.executable, str(OURS / "fetch.py"), str(folder), str(dest)], check=True)


def lint(root: Path, paths: list[str]) -> list[dict]:
    """The CLI's JSON findings at every confidence for ``paths`` (relative to ``root``)."""
    # An empty config: the corpus (or a folder above it) must not change the options;
    # no cache: every figure comes from the rules as they are now.
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "pyproject.toml"
        config.write_text("")
        proc = subprocess.run(
            [sys.executable, "-m", "dtype_lint", "check", "--output-format", "json", "--exit-zero", "--no-cache",
             "--min-confidence", "low", "--config", str(config), *paths],
            cwd=root, capture_output=True, text=True,
            # This checkout's code, whatever copy of dtype-lint is installed.
            env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))},
        )
    if proc.returncode != 0:
        sys.exit(f"dtype-lint failed ({proc.returncode}):\n{proc.stderr}")
    return json.loads(proc.stdout)


def passes(scores: dict[str, scoring.FamilyScore]) -> bool:
    """Precision at the target for every family that has findings."""
    return all(math.isnan(s.precision) or s.precision >= TARGET for s in scores.values())


def default_level(by_level: dict[str, dict[str, dict]], names: list[str]) -> str | None:
    """The lowest level whose precision passes on every one of ``names``; None if none does."""
    return next((level for level in LEVELS if all(passes(by_level[level][n]) for n in names)), None)


def sample(paths: list[Path], count: int, seed: int) -> str:
    """``count`` default-run findings drawn at random from linting ``paths``, with their lines."""
    findings = [f for f in lint(Path.cwd(), [str(p) for p in paths]) if f["confidence"] != "low"]
    findings.sort(key=lambda f: (f["path"], f["line"], f["code"]))
    picked = random.Random(seed).sample(findings, min(count, len(findings)))
    out = [f"{len(picked)} of {len(findings)} findings (seed {seed})"]
    for number, finding in enumerate(sorted(picked, key=lambda f: (f["code"], f["path"], f["line"])), 1):
        lines = Path(finding["path"]).read_text(encoding="utf-8", errors="replace").splitlines()
        text = lines[finding["line"] - 1].strip() if finding["line"] <= len(lines) else ""
        out.append(f"{number:3d}. {finding['code']} {finding['path']}:{finding['line']}  {text}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", default=[], metavar="NAME=FOLDER",
                        help="another labelled set (files.txt, labels.jsonl, fetch.sh or entries.txt)")
    parser.add_argument("--only", action="append", default=[], metavar="NAME", help="score only these sets")
    parser.add_argument("--data", type=Path, default=REPO / ".bench-cache",
                        help="where each set is fetched, one folder per name")
    parser.add_argument("--choose-on", default="a,b,c,d", help="the development sets that choose the default level")
    parser.add_argument("--list", action="store_true", help="list every miss and false alarm (at --level)")
    parser.add_argument("--level", choices=LEVELS, default="medium", help="the level --list lists")
    parser.add_argument("--sample", type=int, metavar="N", help="print N random findings of PATHS instead")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("paths", nargs="*", type=Path, help="with --sample: folders to lint")
    args = parser.parse_args(argv)
    if args.sample is not None:
        if not args.paths:
            parser.error("--sample needs PATHS")
        print(sample(args.paths, args.sample, args.seed))
        return 0
    sets = dict(SETS)
    sets.update({name: Path(folder) for name, folder in (item.split("=", 1) for item in args.set)})
    if args.only:
        sets = {name: sets[name] for name in args.only}
    by_level: dict[str, dict[str, dict]] = {level: {} for level in LEVELS}
    for name, folder in sets.items():
        folder = folder.resolve()
        if not (folder / "labels.jsonl").is_file():
            print(f"## {name}: no labelled set in {folder}; skipped", file=sys.stderr)
            continue
        dest = (args.data / f"corpus-{name}").resolve()
        ensure_fetched(folder, dest)
        findings = lint(dest, scoring.listed_files(folder))
        judged = OURS / "judged" / f"{name}.jsonl"
        for level in LEVELS:
            by_level[level][name] = scoring.score(folder, findings, min_confidence=level, judged=judged)
    chooser = [n for n in args.choose_on.split(",") if n in by_level["low"]]
    for level in LEVELS:
        print(f"# min-confidence {level}")
        for name, scores in by_level[level].items():
            print(f"## {name}\n{scoring.table(scores)}")
        if len(chooser) > 1:
            print(f"## union {'+'.join(chooser)}\n{scoring.table(scoring.union([by_level[level][n] for n in chooser]))}")
        print()
    if chooser:
        chosen = default_level(by_level, chooser)
        print(f"default level (precision >= {TARGET} per family on {', '.join(chooser)}): "
              + (chosen or "none passes"))
    if args.list:
        for name, scores in by_level[args.level].items():
            for family, s in scores.items():
                for miss in s.missed:
                    print(f"{name} {family} missed     {miss}")
                for alarm in s.false_alarms:
                    print(f"{name} {family} false-pos  {alarm}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
