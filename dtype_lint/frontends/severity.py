"""How severe a finding is, and how each output spells it: SARIF's ``level``, the
GitHub workflow command, the LSP ``DiagnosticSeverity``. Kept in one place so that the
three never disagree about the same finding.
"""

from __future__ import annotations

from dtype_lint.core.finding import Finding

# Every finding is a hazard the user is asked to fix (the CLI fails on any), so all of
# them are errors; a rule that is only advice would get another level here.
ERROR = "error"

# SARIF's levels (error, warning, note) as GitHub workflow commands and as LSP severities
# (1 Error, 2 Warning, 3 Information).
GITHUB_COMMAND = {"error": "error", "warning": "warning", "note": "notice"}
LSP_SEVERITY = {"error": 1, "warning": 2, "note": 3}


def level(finding: Finding) -> str:
    """The finding's SARIF level."""
    return ERROR
