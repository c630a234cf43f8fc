"""Lines as LibCST (and so every position we report) counts them: ended by \\n, \\r\\n or
\\r only, unlike str.splitlines, which also splits at form feeds and other separators."""

from __future__ import annotations

import re

NEWLINE = re.compile(r"\r\n|\r|\n")


def line_starts(text: str) -> list[int]:
    """Offsets where each line starts, and the text's end."""
    return [0] + [m.end() for m in NEWLINE.finditer(text)] + [len(text)]


def place(text: str, offset: int) -> tuple[int, int]:
    """The 1-based line and column of ``offset`` in ``text``."""
    starts = [0] + [m.end() for m in NEWLINE.finditer(text, 0, offset)]
    return len(starts), offset - starts[-1] + 1
