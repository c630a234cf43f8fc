"""`# noqa` comments: per line (all codes, exact codes or code prefixes) and per file.

A finding's `# noqa` goes on its first line, unless that line cannot end in a comment:
a line that ends inside a multi-line string, or with a backslash continuation, is
joined with the lines after it up to the next real line end, and a `# noqa` anywhere in
that span counts (as flake8 reads it, and as ruff does for multi-line strings). The
span's last line is where `--add-noqa` writes (:mod:`dtype_lint.core.noqa`).
"""

from __future__ import annotations

import io
import re
import tokenize

_NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]*(?:[,\s]+[A-Z]+[0-9]*)*))?", re.IGNORECASE)
_FILE_NOQA = re.compile(r"#\s*dtype-lint:\s*noqa\b", re.IGNORECASE)
_CODE_SEPARATOR = re.compile(r"[,\s]+")
# Python 3.12 tokenizes f-strings into parts, with NL tokens inside a replacement field
# that spans lines; those NLs do not end a line that could take a comment.
_FSTRING_START = getattr(tokenize, "FSTRING_START", None)
_FSTRING_END = getattr(tokenize, "FSTRING_END", None)


def file_is_exempt(source: str) -> bool:
    """A `# dtype-lint: noqa` comment anywhere in the file turns every rule off for it."""
    return "dtype-lint" in source and _FILE_NOQA.search(source) is not None


def find_noqa(text: str) -> re.Match[str] | None:
    """The first `# noqa` comment in ``text``; its ``codes`` group is None for a bare one."""
    return _NOQA.search(text) if "noqa" in text.lower() else None


def _split_codes(codes: str) -> list[str]:
    return [c.upper() for c in _CODE_SEPARATOR.split(codes) if c]


def line_suppresses(line: str, code: str) -> bool:
    """Whether a `# noqa` on this physical line covers ``code``.

    `# noqa` covers everything; `# noqa: DTL101, DTL2` covers DTL101 and every DTL2xx.
    """
    if "noqa" not in line.lower():
        return False
    for match in _NOQA.finditer(line):
        codes = match.group("codes")
        if codes is None or any(code.startswith(c) for c in _split_codes(codes)):
            return True
    return False


def continued_spans(text: str) -> dict[int, tuple[int, int]] | None:
    """For each line that cannot end in a comment, the span of lines (first, last)
    joined with it; lines not in the result are spans of their own. None if the text
    does not tokenize."""
    spans: dict[int, tuple[int, int]] = {}
    first = None
    fstrings = 0
    readline = io.StringIO(text, newline=None).readline  # \r and \r\n end lines too, as in LibCST
    try:
        for kind, _, start, end, _ in tokenize.generate_tokens(readline):
            if kind in (tokenize.ENDMARKER, tokenize.DEDENT):
                continue
            if kind == _FSTRING_START:
                fstrings += 1
            elif kind == _FSTRING_END:
                fstrings -= 1
            if first is None:
                first = start[0]
            if kind in (tokenize.NL, tokenize.NEWLINE) and not fstrings:
                if end[0] > first:
                    spans.update(dict.fromkeys(range(first, end[0] + 1), (first, end[0])))
                first = None
    except (tokenize.TokenError, SyntaxError):
        return None
    return spans


class Suppressions:
    """The `# noqa` comments of one file; the file is tokenized only if a finding's own
    line has no `# noqa` for it and the file has one somewhere."""

    def __init__(self, text: str, lines: list[str]) -> None:
        self._text = text
        self._lines = lines
        self._spans: dict[int, tuple[int, int]] | None = None if "noqa" in text.lower() else {}

    def covers(self, line: int, code: str) -> bool:
        """Whether a `# noqa` honoured for a finding on ``line`` covers ``code``."""
        if line_suppresses(self._lines[line - 1] if line <= len(self._lines) else "", code):
            return True
        if self._spans is None:
            self._spans = continued_spans(self._text) or {}
        first, last = self._spans.get(line, (line, line))
        last = min(last, len(self._lines))
        return any(line_suppresses(self._lines[i - 1], code) for i in range(first, last + 1) if i != line)
