"""Every static rule's code and name, read from the rule modules' file names.

Importing the rules imports LibCST (about 0.3 s); configuration checks, warm cached
runs and the mypy plugin's start-up only need the codes. `tests/test_catalog.py` checks
that these match the rules' own docs.
"""

from __future__ import annotations

import functools
import os
import re

_RULE_MODULE = re.compile(r"^dtl(\d{3})_(\w+)\.py$")
# The rules that run only when selected (their docs say `default_enabled=False`).
OPT_IN_CODES = frozenset({"DTL304"})


@functools.lru_cache(maxsize=1)
def rule_codes() -> dict[str, str]:
    """Code -> name (``DTL303`` -> ``module-recast``), without importing the rules."""
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rules")
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        names = []
    codes = {f"DTL{m[1]}": m[2].replace("_", "-") for m in map(_RULE_MODULE.match, names) if m}
    if not codes:  # an installation without source files (a zipapp, say)
        from dtype_lint.rules import RULES

        codes = {rule.doc.code: rule.doc.name for rule in RULES}
    return codes
