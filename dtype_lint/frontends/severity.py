"""How severe a finding is, and how each output spells it: SARIF's ``level``, the
GitHub workflow command, the LSP ``DiagnosticSeverity``. Kept in one place so that the
three never disagree about the same finding.
"""

from __future__ import annotations

from dtype_lint.core.finding import Finding

# A finding the evidence fully shows is an error; one that rests on a convention a
# warning; a pattern alone (the audit mode's) a note, which editors show as information.
ERROR = "error"
_BY_CONFIDENCE = {"high": ERROR, "medium": "warning", "low": "note"}

# SARIF's levels (error, warning, note) as GitHub workflow commands and as LSP severities
# (1 Error, 2 Warning, 3 Information).
GITHUB_COMMAND = {"error": "error", "warning": "warning", "note": "notice"}
LSP_SEVERITY = {"error": 1, "warning": 2, "note": 3}


def level(finding: Finding) -> str:
    """The finding's SARIF level, from its confidence."""
    return _BY_CONFIDENCE[finding.confidence]
