"""What a person reads at the end of a run: colour, and the closing summary line.

Colour is on when the stream is a terminal; `NO_COLOR` (any non-empty value) turns it
off and `FORCE_COLOR` on even when piped, NO_COLOR winning where both are set (as
CPython reads them). The summaries follow ruff's wording.
"""

from __future__ import annotations

import os
from typing import TextIO

from dtype_lint.core.finding import FileError, Finding


def use_color(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def paint(text: str, code: str, color: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if color else text


def summary(findings: list[Finding], errors: list[FileError], files: int, fixed: int = 0) -> str:
    """`Found N findings (M fixable with --fix; K more with --unsafe-fixes).`, or
    `All checks passed!`; files (and notebook cells) that could not be linted are counted
    after it, and where none of the run's ``files`` could be, the summary says so
    (`No file was linted: 1 file could not be linted.`)."""
    unlinted = len({e.path for e in errors if e.cell is None})
    cells = sum(1 for e in errors if e.cell is not None)
    parts = [_plural(n, noun) for n, noun in ((unlinted, "file"), (cells, "notebook cell")) if n]
    errors_note = f" {' and '.join(parts)} could not be linted." if errors else ""
    if not findings and not fixed:
        if not errors:
            return "All checks passed!"
        if unlinted >= files:
            return f"No file was linted: {errors_note.strip()}"
        return "No findings in the files linted." + errors_note
    safe = sum(1 for f in findings if f.fix and f.fix.applicability == "safe")
    unsafe = sum(1 for f in findings if f.fix and f.fix.applicability != "safe")
    notes = []
    if fixed:
        notes.append(f"{fixed} fixed, {len(findings)} remaining")
    if safe:
        notes.append(f"{safe} fixable with --fix")
    if unsafe:
        notes.append(f"{unsafe} {'more' if safe else 'fixable'} with --unsafe-fixes")
    found = _plural(len(findings) + fixed, "finding")
    return f"Found {found}" + (f" ({'; '.join(notes)})" if notes else "") + "." + errors_note


def diff_summary(findings: list[Finding], unsafe_fixes: bool) -> str | None:
    """What ``--diff`` ends with, in ruff's words: `Would fix N findings.` (with the
    unsafe fixes left out, if any), `No findings would be fixed (N fixes available with
    --unsafe-fixes).`, or None when no finding has a fix."""
    safe = sum(1 for f in findings if f.fix and f.fix.applicability == "safe")
    unsafe = sum(1 for f in findings if f.fix and f.fix.applicability != "safe")
    would, held_back = (safe + unsafe, 0) if unsafe_fixes else (safe, unsafe)
    if would:
        more = f" ({_plural(held_back, 'additional fix', 'additional fixes')} available with --unsafe-fixes)"
        return f"Would fix {_plural(would, 'finding')}{more if held_back else ''}."
    if held_back:
        return f"No findings would be fixed ({_plural(held_back, 'fix', 'fixes')} available with --unsafe-fixes)."
    return None


def _plural(count: int, noun: str, nouns: str | None = None) -> str:
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"
