"""Every static rule's code and name, read from the rule modules' file names.

Importing the rules imports LibCST (about 0.3 s); configuration checks, warm cached
runs and the mypy plugin's start-up only need the codes. `tests/test_catalog.py` checks
that these match the rules' own docs.
"""

from __future__ import annotations

import functools
import re
from importlib import resources

RULE_MODULE = re.compile(r"^dtl(\d{3})_(\w+)\.py$")
_OPT_IN = re.compile(r"\bdefault_enabled\s*=\s*False\b")


@functools.lru_cache(maxsize=1)
def _rule_files() -> tuple[tuple[str, str, bool], ...]:
    """(code, name, opt-in) of each rule module in the family folders, in code order.
    A rule's own file says whether it runs only when selected (``default_enabled=False``
    in its docs); this reads that from its text instead of importing it."""
    found = []
    for family in resources.files("dtype_lint.rules").iterdir():
        if not family.is_dir():
            continue
        for entry in family.iterdir():
            match = RULE_MODULE.match(entry.name)
            if match:
                opt_in = bool(_OPT_IN.search(entry.read_text(encoding="utf-8")))
                found.append((f"DTL{match[1]}", match[2].replace("_", "-"), opt_in))
    return tuple(sorted(found))


def rule_codes() -> dict[str, str]:
    """Code -> name (``DTL303`` -> ``module-recast``), without importing the rules."""
    return {code: name for code, name, _ in _rule_files()}


def opt_in_codes() -> frozenset[str]:
    """The rules that run only when selected."""
    return frozenset(code for code, _, opt_in in _rule_files() if opt_in)

