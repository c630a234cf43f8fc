"""Accuracy of dtype-lint on the labelled corpora: precision and recall per hazard family.

    python benchmarks/accuracy.py                   # both corpora, fetched once into .bench-cache/
    python benchmarks/accuracy.py --only b --list   # one corpus, with every miss and false alarm
    python benchmarks/accuracy.py --show-unlabelled --widen  # also review unlabelled findings
    python benchmarks/accuracy.py --sample 100 PKG_DIR ...   # random findings of whole packages

Every rule change is judged on both corpora (``corpus/`` and ``corpus-b/``, ten packages
each): a table per corpus and family, then their union. A change that raises one and
lowers the other is not done.

The corpora and their tools (``fetch.sh``, ``files.txt``, ``labels.jsonl``, ``score.py``)
live outside the repository, in ``<repo>/../shared/corpus*/`` unless ``--corpus NAME=DIR``
says otherwise; they are called, never copied. The linter runs as the real CLI
(``dtype-lint check --output-format json``) with default options, and ``score.py`` scores
its findings with each family taken from the code prefix and one line of tolerance.

``--sample N PATHS`` lints whole folders that no corpus labels and prints N findings
drawn at random (seeded, ``--seed``) with their line, for reading by hand: the sampled
precision in the README comes from such a review.
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

REPO = Path(__file__).resolve().parent.parent
FAMILIES = {"DTL1": "F1", "DTL2": "F2", "DTL3": "F3"}
TARGET = 0.90
LINE_TOLERANCE = 1


def listed_files(tools: Path) -> list[str]:
    """``<dist_dir>/<path>`` of every exhaustively labelled file."""
    out = []
    for raw in (tools / "files.txt").read_text(encoding="utf-8").splitlines():
        if raw.strip() and not raw.startswith("#"):
            _, dist_dir, path = raw.split("\t")
            out.append(f"{dist_dir}/{path}")
    return out


def ensure_corpus(corpus: Path, tools: Path, files: list[str]) -> None:
    """Fetch the corpus into ``corpus`` unless every labelled file is already there."""
    if all((corpus / f).is_file() for f in files):
        return
    print(f"fetching the corpus into {corpus} ...", file=sys.stderr)
    subprocess.run(["bash", str(tools / "fetch.sh"), str(corpus)], check=True)


def lint(corpus: Path, paths: list[str], select: str | None = None) -> list[dict]:
    """The CLI's JSON findings for ``paths`` (relative to ``corpus``), paths kept relative."""
    # An empty config: the corpus (or a folder above it) must not change the options;
    # no cache: every figure comes from the rules as they are now.
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "pyproject.toml"
        config.write_text("")
        proc = subprocess.run(
            [sys.executable, "-m", "dtype_lint", "check", "--output-format", "json", "--exit-zero",
             "--no-cache", "--config", str(config), *(["--select", select] if select else []), *paths],
            cwd=corpus, capture_output=True, text=True,
            # This checkout's code, whatever copy of dtype-lint is installed.
            env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))},
        )
    if proc.returncode != 0:
        sys.exit(f"dtype-lint failed ({proc.returncode}):\n{proc.stderr}")
    return json.loads(proc.stdout)


def score(corpus: Path, tools: Path, findings: list[dict]) -> dict:
    """``score.py --json`` output for ``findings``."""
    with tempfile.TemporaryDirectory() as tmp:
        findings_path, out_path = Path(tmp) / "findings.json", Path(tmp) / "score.json"
        findings_path.write_text(json.dumps(findings))
        return run_scorer(tools / "score.py", corpus, findings_path, out_path,
                          labels=tools / "labels.jsonl", files=tools / "files.txt")


def run_scorer(scorer: Path, corpus: Path, findings: Path, out: Path, labels: Path, files: Path) -> dict:
    families = [arg for prefix, fam in FAMILIES.items() for arg in ("--family", f"{prefix}={fam}")]
    subprocess.run(
        [sys.executable, str(scorer), str(corpus), str(findings), *families,
         "--line-tolerance", str(LINE_TOLERANCE), "--labels", str(labels), "--files", str(files),
         "--json", str(out)],
        check=True, stdout=subprocess.DEVNULL,
    )
    return json.loads(out.read_text(encoding="utf-8"))


def build_table(result: dict) -> str:
    """One row per family from ``score.py --json`` output."""
    header = ("family", "hazards", "found", "missed", "FP benign", "unlabelled", "precision", "recall", "")
    rows = [header]
    for family, stats in sorted(result["families"].items()):
        precision, recall = float(stats["precision"]), float(stats["recall"])
        ok = all(not math.isnan(v) and v >= TARGET for v in (precision, recall))
        rows.append((family, str(stats["hazards"]), str(stats["tp"]), str(stats["fn"]),
                     str(stats["fp_labels"]), str(stats["unlabelled_findings"]),
                     f"{precision:.3f}", f"{recall:.3f}", "ok" if ok else f"below {TARGET:.2f}"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))).rstrip()
        for row in rows
    )


def build_listing(result: dict, unlabelled: bool = False) -> str:
    """Every miss and false positive (and optionally unlabelled finding) as path:line."""
    lines = []
    for family, stats in sorted(result["families"].items()):
        for miss in stats["missed"]:
            lines.append(f"{family} missed     {miss['path']}:{miss['line']}  {miss['reason']}")
        for fp in stats["false_positives"]:
            lines.append(f"{family} false-pos  {fp['path']}:{fp['line']} [{fp['code']}]  {fp['reason']}")
        if unlabelled:
            for item in stats["unlabelled"]:
                lines.append(f"{family} unlabelled {item['path']}:{item['line']} [{item['code']}]")
    return "\n".join(lines)


CORPORA = {"a": REPO.parent / "shared" / "corpus", "b": REPO.parent / "shared" / "corpus-b"}


def union(results: list[dict]) -> dict:
    """The corpora's counts added up per family, with precision and recall recomputed."""
    families: dict[str, dict] = {}
    for result in results:
        for family, stats in result["families"].items():
            into = families.setdefault(family, {"hazards": 0, "tp": 0, "fn": 0, "fp_labels": 0,
                                                "unlabelled_findings": 0})
            for key in into:
                into[key] += stats[key]
    for stats in families.values():
        flagged = stats["tp"] + stats["fp_labels"]
        stats["precision"] = stats["tp"] / flagged if flagged else math.nan
        stats["recall"] = stats["tp"] / stats["hazards"] if stats["hazards"] else math.nan
    return {"families": families}


def sample(paths: list[Path], count: int, seed: int, select: str | None) -> str:
    """``count`` findings drawn at random from linting ``paths``, each with its line."""
    findings = sorted(lint(Path.cwd(), [str(p) for p in paths], select), key=lambda f: (f["path"], f["line"], f["code"]))
    picked = random.Random(seed).sample(findings, min(count, len(findings)))
    out = [f"{len(picked)} of {len(findings)} findings (seed {seed})"]
    for number, finding in enumerate(sorted(picked, key=lambda f: (f["code"], f["path"], f["line"])), 1):
        lines = Path(finding["path"]).read_text(encoding="utf-8", errors="replace").splitlines()
        text = lines[finding["line"] - 1].strip() if finding["line"] <= len(lines) else ""
        out.append(f"{number:3d}. {finding['code']} {finding['path']}:{finding['line']}  {text}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", action="append", default=[], metavar="NAME=TOOLS",
                        help="a corpus's tools folder (fetch.sh, files.txt, labels.jsonl, score.py); "
                             "default: a=../shared/corpus and b=../shared/corpus-b")
    parser.add_argument("--only", action="append", default=[], metavar="NAME", help="score only these corpora")
    parser.add_argument("--data", type=Path, default=REPO / ".bench-cache",
                        help="where each corpus is fetched, one folder per name")
    parser.add_argument("--list", action="store_true", help="list every miss and false alarm")
    parser.add_argument("--show-unlabelled", action="store_true",
                        help="also list findings on unlabelled lines of the labelled files")
    parser.add_argument("--widen", action="store_true",
                        help="also lint every .py file of the corpus packages and list the findings "
                             "outside the labelled files (for review by hand)")
    parser.add_argument("--sample", type=int, metavar="N", help="print N random findings of PATHS instead")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--select", help="with --sample: only these codes or prefixes (DTL1,DTL303)")
    parser.add_argument("paths", nargs="*", type=Path, help="with --sample: folders to lint")
    args = parser.parse_args(argv)
    if args.sample is not None:
        if not args.paths:
            parser.error("--sample needs PATHS")
        print(sample(args.paths, args.sample, args.seed, args.select))
        return 0
    corpora = dict(CORPORA)
    corpora.update(dict(item.split("=", 1) for item in args.corpus))  # type: ignore[misc]
    if args.only:
        corpora = {name: corpora[name] for name in args.only}
    results = []
    for name, tools_dir in corpora.items():
        tools, corpus = Path(tools_dir).resolve(), (args.data / f"corpus-{name}").resolve()
        if not (tools / "score.py").is_file():
            sys.exit(f"no corpus tools in {tools}; pass --corpus {name}=DIR")
        files = listed_files(tools)
        ensure_corpus(corpus, tools, files)
        result = score(corpus, tools, lint(corpus, files))
        results.append(result)
        print(f"## corpus {name} ({tools.name}: {len(files)} files)")
        print(build_table(result))
        listing = build_listing(result, args.show_unlabelled) if (args.list or args.show_unlabelled) else ""
        if listing:
            print()
            print(listing)
        if args.widen:
            packages = sorted({f.split("/", 1)[0] for f in files})
            listed = set(files)
            print()
            for finding in lint(corpus, packages):
                if finding["path"] not in listed:
                    print(f"outside    {finding['path']}:{finding['line']} [{finding['code']}]")
        print()
    if len(results) > 1:
        print(f"## union ({', '.join(corpora)})")
        print(build_table(union(results)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
