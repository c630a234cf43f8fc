"""Applying fixes: text edits, a parse check, and an atomic write that keeps the file's
encoding, line endings and mode."""

from __future__ import annotations

import os
import tempfile

from dtype_lint.core.engine import LintError, parse
from dtype_lint.core.finding import Edit, Finding
from dtype_lint.core.lines import line_starts


def applicable(findings: list[Finding], unsafe: bool) -> list[Finding]:
    return [f for f in findings if f.fix and (f.fix.applicability == "safe" or unsafe)]


def apply_edits(text: str, edits: list[Edit]) -> str:
    """Apply non-overlapping edits (overlapping ones after the first are skipped, and an
    edit given twice, such as two fixes' one import, is applied once)."""
    starts = line_starts(text)
    spans = []
    for edit in sorted(set(edits)):
        start = starts[edit.line - 1] + edit.column - 1
        end = starts[edit.end_line - 1] + edit.end_column - 1
        if spans and start < spans[-1][1]:
            continue
        spans.append((start, end, edit.content))
    out, last = [], 0
    for start, end, content in spans:
        out.append(text[last:start])
        out.append(content)
        last = end
    out.append(text[last:])
    return "".join(out)


def fixed_text(text: str, findings: list[Finding]) -> str:
    """The text with every given finding's fix applied, or LintError if it would not parse."""
    edits = [edit for f in findings if f.fix for edit in f.fix.edits]
    new = apply_edits(text, edits)
    try:
        parse(new)
    except LintError as exc:
        raise LintError(f"fix dropped: the result would not parse ({exc})") from None
    return new


def write_atomic(path: str, data: bytes, expected_old: bytes) -> None:
    """Replace ``path`` with ``data`` via a temporary file in the same folder and a rename,
    keeping its mode; refuse if the file changed since it was read."""
    with open(path, "rb") as handle:
        if handle.read() != expected_old:
            raise LintError("file changed since it was read; left alone")
    mode = os.stat(path).st_mode
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".dtype-lint-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
