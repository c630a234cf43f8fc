"""Long fuzz runs: the properties of tests/test_fuzz.py over many generated programs.

    python benchmarks/fuzz.py --examples 20000

Prints how many programs were tried, how many the linter reported as errors (allowed:
a one-line reason), how many had findings and fixes, and stops at the first failure.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from hypothesis import HealthCheck, given, settings  # noqa: E402

from dtype_lint.core.engine import LintError, lint_source, parse  # noqa: E402
from dtype_lint.core.fixes import apply_edits, fixed_text  # noqa: E402
from dtype_lint.core.noqa import noqa_edits  # noqa: E402
from dtype_lint.core.options import Options  # noqa: E402
from dtype_lint.rules.registry import RULES  # noqa: E402
from strategies import seeded_programs  # noqa: E402


def check(program: str, counts: collections.Counter) -> None:
    counts["programs"] += 1
    try:
        findings = lint_source(program, "fuzz.py", RULES, Options())
    except LintError:
        counts["reported errors"] += 1
        return
    counts["findings"] += len(findings)
    if findings:
        noqa = apply_edits(program, noqa_edits(program, findings))
        parse(noqa)
        assert not lint_source(noqa, "fuzz.py", RULES, Options()), f"a written # noqa does not suppress\n{noqa}"
        assert not noqa_edits(noqa, findings), f"second --add-noqa pass not idempotent\n{noqa}"
        counts["programs given # noqa"] += 1
    fixable = [f for f in findings if f.fix]
    if not fixable:
        return
    once = fixed_text(program, fixable)
    parse(once)
    counts["programs fixed"] += 1
    again = [f for f in lint_source(once, "fuzz.py", RULES, Options()) if f.fix]
    assert not again, f"second fix pass not idempotent: {again}\n{once}"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--examples", type=int, default=2000)
    args = parser.parse_args()
    counts: collections.Counter = collections.Counter()
    start = time.perf_counter()

    @settings(max_examples=args.examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(seeded_programs())
    def run(program: str) -> None:
        check(program, counts)
        if counts["programs"] % 1000 == 0:  # a long run shows it is alive
            print(f"... {counts['programs']} programs, {time.perf_counter() - start:.0f} s", file=sys.stderr)

    run()
    elapsed = time.perf_counter() - start
    print(f"{counts['programs']} programs in {elapsed:.0f} s: {counts['findings']} findings, "
          f"{counts['programs fixed']} programs fixed and re-checked, "
          f"{counts['programs given # noqa']} given # noqa and re-checked, "
          f"{counts['reported errors']} reported as errors, 0 failures")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
