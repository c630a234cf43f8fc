"""The catalog: unique codes in the right family, full docs, fixtures, a current README."""

from __future__ import annotations

import argparse
import re

from conftest import FIXTURES, ROOT, expectations
from dtype_lint.frontends import docs
from dtype_lint.rules.catalog import FAMILIES
from dtype_lint.rules.registry import RULES, all_docs


def test_codes_are_unique_and_well_formed():
    codes = [rule.doc.code for rule in RULES]
    assert len(codes) == len(set(codes))
    names = [doc.name for doc in all_docs().values()]
    assert len(names) == len(set(names))
    for code in all_docs():
        assert re.fullmatch(r"DTL[123]\d\d", code), code
        assert code[3] in FAMILIES


def test_every_code_is_documented():
    for code, doc in all_docs().items():
        for field in ("summary", "what_it_does", "why_bad", "example", "use_instead", "fix_safety", "options"):
            assert getattr(doc, field).strip(), f"{code} lacks {field}"
        text = doc.markdown()
        for heading in ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety"):
            assert heading in text


def test_every_static_rule_has_fixtures():
    expected_codes = set()
    for path in FIXTURES.glob("dtl*.py"):
        expected_codes |= {code for _, code in expectations(path)}
    for rule in RULES:
        assert rule.doc.code in expected_codes, f"{rule.doc.code} has no fixture expectation"
        assert list(FIXTURES.glob(f"{rule.doc.code.lower()}_*.py")), f"{rule.doc.code} has no fixture file"


def test_rules_with_fixes_say_how_safe():
    for rule in RULES:
        assert rule.fix in (None, "safe", "unsafe")
        if rule.fix:
            assert rule.fix in rule.doc.fix_safety.lower()


def test_readme_rules_table_is_current():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert docs.render(readme) == readme, "run: python -m dtype_lint.frontends.docs"


def test_readme_documents_every_option():
    from dtype_lint.rules.options import OPTION_KEYS

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for key in OPTION_KEYS:
        assert f"`{key}`" in readme, key


def test_rule_codes_from_file_names_match_the_rules():
    from dtype_lint.rules.codes import rule_codes

    assert rule_codes() == {rule.doc.code: rule.doc.name for rule in RULES}


def test_opt_in_codes_match_the_rules():
    from dtype_lint.rules.codes import opt_in_codes

    assert opt_in_codes() == {rule.doc.code for rule in RULES if not rule.doc.default_enabled}


def _github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading (github-slugger: lower case, punctuation but
    `-` and `_` dropped, spaces to hyphens)."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_rule_has_a_readme_section_at_its_help_uri_anchor():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    anchors = {_github_slug(line.lstrip("#")) for line in readme.splitlines() if line.startswith("#")}
    for doc in all_docs().values():
        assert doc.anchor in anchors, doc.code
        assert doc.help_uri.endswith("#" + doc.anchor)


def test_readme_documents_every_cli_option():
    from dtype_lint.frontends.cli import build_parser

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    for name in ("check", "fix"):
        for action in commands[name]._actions:
            if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
                continue
            for flag in action.option_strings:
                assert flag in readme, flag
