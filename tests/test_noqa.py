"""`noqa_edits` (what `--add-noqa` writes): placement, merging, idempotence, and that
each written comment then suppresses its finding."""

from __future__ import annotations

import subprocess
import sys

import pytest

from dtype_lint.core.engine import lint_source
from dtype_lint.core.fixes import apply_edits
from dtype_lint.core.noqa import noqa_edits
from dtype_lint.core.options import Options
from dtype_lint.rules.registry import RULES

HEAD = "import jax\nimport torch\n"
CALL = "jax.tree_map(f, x)"  # DTL304


def lint(text: str):
    return lint_source(text, "m.py", RULES, Options())


def add_noqa(text: str) -> str:
    return apply_edits(text, noqa_edits(text, lint(text)))


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (f"y = {CALL}\n", f"y = {CALL}  # noqa: DTL304\n"),
        (f"y = {CALL}   \n", f"y = {CALL}  # noqa: DTL304\n"),
        # the line's own comment stays, first
        (f"y = {CALL}  # why\n", f"y = {CALL}  # why  # noqa: DTL304\n"),
        # an existing `# noqa: ...` is merged with: codes sorted, no duplicates
        (f"y = {CALL}  # noqa: E501\n", f"y = {CALL}  # noqa: DTL304, E501\n"),
        (f"y = {CALL}  # why # noqa:E501,B008 (reason)\n", f"y = {CALL}  # why # noqa: B008, DTL304, E501 (reason)\n"),
        # a reason after the codes is kept, and is no code
        (f"y = {CALL}  # noqa: E501 too long\n", f"y = {CALL}  # noqa: DTL304, E501 too long\n"),
        (f"y = {CALL}  # noqa: because\n", f"y = {CALL}  # noqa: DTL304 because\n"),
        (f"y = {CALL}  # NOQA:e501\n", f"y = {CALL}  # noqa: DTL304, E501\n"),
        # a `#` inside a string is not a comment
        (f"y = ({CALL}, '# noqa: E501')\n", f"y = ({CALL}, '# noqa: E501')  # noqa: DTL304\n"),
        # line ends kept
        (f"y = {CALL}\r\nz = 1\r\n", f"y = {CALL}  # noqa: DTL304\r\nz = 1\r\n"),
        (f"y = {CALL}", f"y = {CALL}  # noqa: DTL304"),
        # inside brackets, the finding's own line takes the comment
        (f"y = g(\n    {CALL},\n    2)\n", f"y = g(\n    {CALL},  # noqa: DTL304\n    2)\n"),
        # a line ending inside a multi-line string: after the string
        (f'y = ({CALL}, """a\nb""")\n', f'y = ({CALL}, """a\nb""")  # noqa: DTL304\n'),
        (f'msg = f"""a\n{{{CALL}}} b\n"""\n', f'msg = f"""a\n{{{CALL}}} b\n"""  # noqa: DTL304\n'),
        # a backslash continuation: on the line that ends the statement
        (f"y = {CALL} + \\\n    1\n", f"y = {CALL} + \\\n    1  # noqa: DTL304\n"),
        # two findings on one line: one comment with both codes
        (f"y = ({CALL}, jax.tree_multimap(f, x))\n", f"y = ({CALL}, jax.tree_multimap(f, x))  # noqa: DTL304\n"),
    ],
)
def test_added_comment(body, expected):
    assert lint(HEAD + body), "the example must hold a finding"
    new = add_noqa(HEAD + body)
    assert new == HEAD + expected
    assert lint(new) == []  # the comment suppresses the finding
    assert noqa_edits(new, lint(HEAD + body)) == []  # idempotent, even given the old findings


def test_several_codes_on_one_line_are_sorted():
    text = HEAD + "def f(x, dtype=torch.float32): return jax.tree_map(g, x)\n"
    assert sorted({f.code for f in lint(text)}) == ["DTL101", "DTL304"]
    assert add_noqa(text).splitlines()[-1].endswith("  # noqa: DTL101, DTL304")


def test_a_code_covered_by_a_prefix_or_bare_noqa_adds_nothing():
    findings = lint(HEAD + f"y = {CALL}\n")
    for comment in ("# noqa", "# noqa: DTL3", "# NOQA: dtl304"):
        text = HEAD + f"y = {CALL}  {comment}\n"
        assert noqa_edits(text, findings) == []


def test_written_files_still_parse_and_compile():
    text = HEAD + f'y = ({CALL}, """a\nb""" \\\n    "c")\n'
    new = add_noqa(text)
    compile(new, "m.py", "exec")
    assert lint(new) == []
    assert new.splitlines()[-1] == '    "c")  # noqa: DTL304'


def test_text_that_does_not_tokenize_gets_no_edit():
    findings = lint(HEAD + f"y = {CALL}\n")
    assert noqa_edits(HEAD + f"y = {CALL}\nz = '''\n", findings) == []


def test_noqa_module_does_not_import_libcst():
    code = "import sys, dtype_lint.core.noqa; assert 'libcst' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
