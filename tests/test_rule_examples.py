"""Each rule's own valid and invalid examples (Fixit style), and its fixes."""

from __future__ import annotations

import pytest

from dtype_lint.core.engine import lint_source, parse
from dtype_lint.core.fixes import fixed_text
from dtype_lint.core.options import Options
from dtype_lint.rules.registry import RULES

VALID = [(rule, code) for rule in RULES for code in rule.valid]
INVALID = [(rule, example) for rule in RULES for example in rule.invalid]


@pytest.mark.parametrize(("rule", "code"), VALID, ids=lambda v: getattr(getattr(v, "doc", None), "code", ""))
def test_valid_examples_are_silent(rule, code):
    assert lint_source(code, "example.py", (rule,), Options()) == []


@pytest.mark.parametrize(("rule", "example"), INVALID, ids=lambda v: getattr(getattr(v, "doc", None), "code", ""))
def test_invalid_examples_are_reported_and_fixed(rule, example):
    # At any confidence: an example may show a shape only the audit mode reports.
    findings = lint_source(example.code, "example.py", (rule,), Options(min_confidence="low"))
    assert findings and {f.code for f in findings} == {rule.doc.code}
    fixable = [f for f in findings if f.fix]
    if example.fixed is None:
        assert not fixable
        return
    assert all(f.fix.applicability == rule.fix for f in fixable)
    new = fixed_text(example.code, fixable)
    assert new == example.fixed
    parse(new)
    assert lint_source(new, "example.py", (rule,), Options(min_confidence="low")) == []


def test_every_rule_has_examples_of_both_kinds():
    for rule in RULES:
        assert rule.valid and rule.invalid, rule.doc.code
