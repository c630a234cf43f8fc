"""`# noqa` (bare, exact codes, prefixes) and the file-level `# dtype-lint: noqa`."""

from __future__ import annotations

import pytest

from dtype_lint.core.engine import lint_source
from dtype_lint.core.options import Options
from dtype_lint.rules.registry import RULES

LINE = "import torch\ndef f(x, dtype=torch.float32): ...{comment}\n"


@pytest.mark.parametrize(
    ("comment", "reported"),
    [
        ("", True),
        ("  # noqa", False),
        ("  # noqa: DTL101", False),
        ("  # noqa: DTL1", False),
        ("  # noqa:DTL101,DTL202", False),
        ("  # NOQA: dtl101", False),
        ("  # noqa: DTL102", True),
        ("  # noqa: DTL2", True),
        ("  # noqa: E501", True),
    ],
)
def test_line_noqa(comment, reported):
    findings = lint_source(LINE.format(comment=comment), "m.py", RULES, Options())
    assert bool(findings) is reported


def test_file_level_noqa():
    text = "# dtype-lint: noqa\n" + LINE.format(comment="")
    assert lint_source(text, "m.py", RULES, Options()) == []


def test_noqa_applies_to_the_reported_line_only():
    text = "import torch\ndef f(\n    x,  # noqa\n    dtype=torch.float32,\n): ...\n"
    assert [f.line for f in lint_source(text, "m.py", RULES, Options())] == [4]


@pytest.mark.parametrize(
    ("text", "reported"),
    [
        # the finding's line ends inside a string: a `# noqa` after the string counts
        ('import jax\ny = (jax.tree_map(f, x), """a\nb""")  # noqa: DTL304\n', False),
        ('import jax\ny = (jax.tree_map(f, x), """a\nb""")  # noqa: DTL1\n', True),
        # ...and with a backslash continuation, on the line that ends the statement
        ("import jax\ny = jax.tree_map(f, x) + \\\n    1  # noqa\n", False),
        # a `# noqa` on a later statement or a later bracketed line does not
        ("import jax\ny = jax.tree_map(f, x)\nz = 1  # noqa\n", True),
        ("import jax\ny = g(\n    jax.tree_map(f, x),\n    2)  # noqa\n", True),
    ],
)
def test_noqa_for_a_line_that_cannot_end_in_a_comment(text, reported):
    assert bool(lint_source(text, "m.py", RULES, Options())) is reported
