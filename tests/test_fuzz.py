"""Property tests on generated programs: nothing raises, and fixes always parse and settle.

A CI-sized run; `python benchmarks/fuzz.py --examples N` runs the same properties longer.
"""

from __future__ import annotations

import ast
import contextlib
import io

from hypothesis import HealthCheck, given, settings

from strategies import seeded_programs
from dtype_lint.frontends.cli import main
from dtype_lint.core.engine import LintError, lint_source, parse
from dtype_lint.core.fixes import apply_edits, fixed_text
from dtype_lint.core.noqa import noqa_edits
from dtype_lint.frontends.flake8_plugin import DtypeLintChecker
from dtype_lint.core.options import Options
from dtype_lint.rules.registry import RULES

FUZZ = settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))


def lint_or_error(text: str):
    try:
        return lint_source(text, "fuzz.py", RULES, Options())
    except LintError:
        return None  # a reported, one-line error: allowed


@FUZZ
@given(seeded_programs())
def test_engine_never_raises(program):
    lint_or_error(program)


@FUZZ
@given(seeded_programs())
def test_flake8_plugin_never_raises(program):
    lines = program.splitlines(keepends=True)
    list(DtypeLintChecker(ast.parse(program), "fuzz.py", lines).run())


@FUZZ
@given(seeded_programs())
def test_unsafe_fixes_parse_and_settle(program):
    findings = lint_or_error(program)
    if not findings:
        return
    fixable = [f for f in findings if f.fix]
    if not fixable:
        return
    once = fixed_text(program, fixable)
    parse(once)
    again = [f for f in lint_source(once, "fuzz.py", RULES, Options()) if f.fix]
    assert not again, f"a second fix pass would change the file: {again}"


@FUZZ
@given(seeded_programs())
def test_added_noqa_parses_suppresses_and_settles(program):
    findings = lint_or_error(program)
    if not findings:
        return
    once = apply_edits(program, noqa_edits(program, findings))
    parse(once)
    assert lint_source(once, "fuzz.py", RULES, Options()) == [], "a written # noqa does not suppress"
    assert noqa_edits(once, findings) == [], "a second --add-noqa would change the file"


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(seeded_programs())
def test_cli_exits_with_a_documented_code(tmp_path_factory, program):
    path = tmp_path_factory.mktemp("fuzz") / "prog.py"
    path.write_text(program, encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["check", str(path), "--fix", "--unsafe-fixes", "--extend-select", "DTL304", "--no-cache"])
    assert code in (0, 1, 2)
    assert "Traceback" not in err.getvalue()
    parse(path.read_text(encoding="utf-8"))
