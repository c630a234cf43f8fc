"""`# noqa` comments: per line (all codes, exact codes or code prefixes) and per file."""

from __future__ import annotations

import re

_NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]*(?:[,\s]+[A-Z]+[0-9]*)*))?", re.IGNORECASE)
_FILE_NOQA = re.compile(r"#\s*dtype-lint:\s*noqa\b", re.IGNORECASE)


def file_is_exempt(source: str) -> bool:
    """A `# dtype-lint: noqa` comment anywhere in the file turns every rule off for it."""
    return "dtype-lint" in source and _FILE_NOQA.search(source) is not None


def line_suppresses(line: str, code: str) -> bool:
    """Whether a `# noqa` on this physical line covers ``code``.

    `# noqa` covers everything; `# noqa: CODE, PREFIX` covers that code and every code
    that starts with the prefix.
    """
    if "noqa" not in line.lower():
        return False
    for match in _NOQA.finditer(line):
        codes = match.group("codes")
        if codes is None:
            return True
        if any(code.startswith(c.upper()) for c in re.split(r"[,\s]+", codes) if c):
            return True
    return False
