"""The mypy plugin's notes for a finding's flow, reported into mypy's own error list (a
real ``mypy.errors.Errors``, formatted by mypy) from findings built here: each step a
``note: via PATH:LINE:COL: MESSAGE`` after its error, silenced with it."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("mypy.errors")

from mypy.errors import Errors  # noqa: E402
from mypy.options import Options  # noqa: E402

from dtype_lint.frontends.mypy.lint import Reported  # noqa: E402
from dtype_lint.frontends.mypy.plugin import ERROR_CODES, report_findings  # noqa: E402

FLOW = (("nets/heads.py", 31, 9, "lambda stored by Scorer.__init__"),
        ("nets/base.py", 12, 1, "Scorer derives from torch.nn.Module"))
FINDINGS = [Reported(2, 16, 2, 29, "DTL101", "float32 default"),
            Reported(5, 14, 5, 22, "DTL204", "a lambda stored on a Scorer instance", FLOW)]


def messages(options: Options, ignored_lines: dict[int, list[str]] | None = None) -> list[str]:
    errors = Errors(options)
    errors.set_file("train.py", "train", options)
    errors.set_file_ignored_lines("train.py", ignored_lines or {}, False)  # as mypy does for every file
    report_findings(errors, FINDINGS)
    return errors.new_messages()


def test_each_step_is_a_note_after_its_error():
    options = Options()
    options.show_column_numbers = True
    assert messages(options) == [
        "train.py:2:16: error: float32 default  [DTL101]",
        "train.py:5:14: error: a lambda stored on a Scorer instance  [DTL204]",
        "train.py:5:14: note: via nets/heads.py:31:9: lambda stored by Scorer.__init__",
        "train.py:5:14: note: via nets/base.py:12:1: Scorer derives from torch.nn.Module",
    ]


def test_what_silences_the_error_silences_its_notes():
    assert messages(Options(), ignored_lines={5: ["DTL204"]}) == ["train.py:2: error: float32 default  [DTL101]"]
    options = Options()
    options.disabled_error_codes = {ERROR_CODES["DTL204"]}
    assert messages(options) == ["train.py:2: error: float32 default  [DTL101]"]


def test_the_flow_crosses_the_workers_pipe():
    sent = json.loads(json.dumps(FINDINGS))  # as the worker writes and the plugin reads
    assert [Reported.from_json(row) for row in sent] == FINDINGS
