"""`--add-noqa`: the text edits that add `# noqa: CODE` for given findings.

Each finding's comment goes where :mod:`dtype_lint.core.suppression` honours it: the
finding's first line, or, where that line ends inside a multi-line string or with a
backslash continuation, the last line of the span joined with it. An existing
`# noqa: ...` there is merged with (codes sorted, no duplicates), any other comment is
kept, and nothing is written for codes a `# noqa` there covers already, so applying the
edits a second time changes nothing. Comments are found by tokenizing, so a `#` inside
a string is never taken for one. Needs no LibCST: the editor server imports this.
"""

from __future__ import annotations

import io
import re
import tokenize
from typing import Sequence

from dtype_lint.core.engine import NEWLINE
from dtype_lint.core.finding import Edit, Finding
from dtype_lint.core.suppression import continued_spans, find_noqa, line_suppresses

# A code or prefix in a `# noqa:` list: letters, then digits.
_CODE = re.compile(r"[A-Za-z]+[0-9]+")


def noqa_edits(text: str, findings: Sequence[Finding]) -> list[Edit]:
    """One edit per line that needs a comment, sorted; none for a text that does not
    tokenize (a comment could land inside a string)."""
    spans = continued_spans(text)
    comments = _comments(text)
    if spans is None or comments is None:
        return []
    lines = NEWLINE.split(text)
    wanted: dict[int, set[str]] = {}
    for finding in findings:
        target = spans.get(finding.line, (finding.line, finding.line))[1]
        if target <= len(lines):
            wanted.setdefault(target, set()).add(finding.code)
    edits = []
    for number, codes in sorted(wanted.items()):
        line = lines[number - 1]
        comment_at = comments.get(number)
        comment = line[comment_at:] if comment_at is not None else ""
        new = sorted(c for c in codes if not line_suppresses(comment, c))
        if new:
            edits.append(_edit(number, line, comment_at, comment, new))
    return edits


def _edit(number: int, line: str, comment_at: int | None, comment: str, codes: list[str]) -> Edit:
    match = find_noqa(comment)
    if comment_at is not None and match is not None:  # `# noqa: A` there: merge
        kept, end = _listed_codes(comment, match)
        rest = "" if kept or end == len(comment) else " "  # `# noqa: reason` keeps its reason apart
        merged = "# noqa: " + ", ".join(sorted(set(codes) | set(kept))) + rest
        return Edit(number, comment_at + match.start() + 1, number, comment_at + end + 1, merged)
    text = "# noqa: " + ", ".join(codes)
    if comment_at is not None:  # the line's own comment stays first
        end = len(comment.rstrip())
        return Edit(number, comment_at + end + 1, number, len(line) + 1, "  " + text)
    end = len(line.rstrip())
    return Edit(number, end + 1, number, len(line) + 1, "  " + text)


def _listed_codes(comment: str, match: re.Match[str]) -> tuple[list[str], int]:
    """The codes a `# noqa:` lists, and where the list ends in ``comment``.

    The suppression pattern also takes the words of a reason after the codes
    (`# noqa: E501 too long`) for codes; the list ends at the first word that is none."""
    kept: list[str] = []
    end = match.start("codes")
    for code in _CODE.finditer(comment, end, match.end("codes")):
        if comment[end:code.start()].strip(", \t"):
            break
        kept.append(code.group().upper())
        end = code.end()
    return kept, end


def _comments(text: str) -> dict[int, int] | None:
    """Line number → 0-based column of the comment that ends that line."""
    comments = {}
    readline = io.StringIO(text, newline=None).readline
    try:
        for kind, _, start, _, _ in tokenize.generate_tokens(readline):
            if kind == tokenize.COMMENT:
                comments[start[0]] = start[1]
    except (tokenize.TokenError, SyntaxError):
        return None
    return comments
