"""The catalog: unique codes in the right family, full docs, fixtures, current generated
docs (README table, rule pages), documented options and flags."""

from __future__ import annotations

import argparse
import re

from conftest import FIXTURES, ROOT, leveled_expectations
from dtype_lint.frontends import docs
from dtype_lint.core.ruledoc import FAMILIES, RUNTIME_CONFIDENCE
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
        for heading in ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety",
                        "## Confidence"):
            assert heading in text


def test_every_static_rule_says_which_evidence_gives_each_confidence():
    # A rule page's Confidence section names each level its findings can have: a rule
    # with a demoting sanitizer can report `low`, so its page must say when.
    for rule in RULES:
        text = rule.doc.confidence
        assert rule.doc.confidence != RUNTIME_CONFIDENCE, f"{rule.doc.code} keeps the runtime text"
        assert any(f"`{level}`" in text for level in ("high", "medium", "low")), rule.doc.code
        if any(check.demotes == "low" for check in rule.finds.unless):
            assert "`low`" in text, f"{rule.doc.code} can report low but its docs do not say when"


def test_every_static_rule_has_fixtures():
    expected_codes = set()
    for path in FIXTURES.glob("dtl*.py"):
        expected_codes |= {code for _, code, _ in leveled_expectations(path)}
    for rule in RULES:
        assert rule.doc.code in expected_codes, f"{rule.doc.code} has no fixture expectation"
        assert list(FIXTURES.glob(f"{rule.doc.code.lower()}_*.py")), f"{rule.doc.code} has no fixture file"


def test_rules_with_fixes_say_how_safe():
    for rule in RULES:
        assert rule.fix in (None, "safe", "unsafe")
        if rule.fix:
            assert rule.fix in rule.doc.fix_safety.lower()


def test_generated_docs_are_current():
    """The README's table, the rule pages, the rules index and the site's navigation."""
    changed, gone = docs.stale(ROOT)
    assert not changed and not gone, "run: python -m dtype_lint.frontends.docs"


def test_stale_docs_are_found_and_rewritten(tmp_path):
    for name in ("README.md", "mkdocs.yml"):
        (tmp_path / name).write_text((ROOT / name).read_text(encoding="utf-8"))
    (tmp_path / "docs" / "rules").mkdir(parents=True)
    (tmp_path / "docs" / "rules" / "dtl999-gone.md").write_text("# a rule that is gone\n")
    assert docs.main([str(tmp_path), "--check"]) == 1
    assert docs.main([str(tmp_path)]) == 0
    assert docs.main([str(tmp_path), "--check"]) == 0
    assert not (tmp_path / "docs" / "rules" / "dtl999-gone.md").exists()
    assert (tmp_path / "docs" / "rules" / "dtl101-float32-dtype-default.md").read_text().startswith("<!-- generated")


def test_configuration_page_documents_every_option():
    from dtype_lint.core.options import OPTION_KEYS

    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    for key in [*OPTION_KEYS, "target-version"]:
        assert f"`{key}" in page, key


def test_rule_codes_from_file_names_match_the_rules():
    from dtype_lint.rules.codes import rule_codes

    assert rule_codes() == {rule.doc.code: rule.doc.name for rule in RULES}


def test_opt_in_codes_match_the_rules():
    from dtype_lint.rules.codes import opt_in_codes

    assert opt_in_codes() == {rule.doc.code for rule in RULES if not rule.doc.default_enabled}


def test_cli_and_configuration_pages_document_every_cli_option():
    from dtype_lint.frontends.cli import build_parser

    readme = "".join((ROOT / "docs" / page).read_text(encoding="utf-8") for page in ("cli.md", "configuration.md"))
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    for name in ("check", "fix"):
        for action in commands[name]._actions:
            if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
                continue
            for flag in action.option_strings:
                assert flag in readme, flag


# A kebab-case name right after a code (`DTL304 removed-jax-tree-alias`, a table's
# `| DTL304 | \`removed-jax-tree-alias\``) is that code's name.
_NAMED = re.compile(r"\b(DTL\d{3})\b[\s|`*]*([a-z0-9]+(?:-[a-z0-9]+)+)")
_BACKTICKED = re.compile(r"`([a-z0-9]+(?:-[a-z0-9]+)+)`")


def test_rule_names_in_the_docs_are_the_registrys():
    """Names written beside codes, and backticked names in the rules' own words, are the
    names `dtype-lint rules` prints (a renamed rule leaves no stale name behind)."""
    from dtype_lint.project.config import _KNOWN_KEYS

    names = {code: doc.name for code, doc in all_docs().items()}
    # The words rule names are made of; a project's name beside a code (the accuracy
    # page's `DTL204 dm-haiku`) shares none of them.
    vocabulary = {word for name in names.values() for word in name.split("-") if len(word) > 2}
    stale = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            where = f"{path.relative_to(ROOT)}:{number}"
            for code, name in _NAMED.findall(line):
                if code in names and name != names[code] and vocabulary & set(name.split("-")):
                    stale.append(f"{where}: {code} {name} (it is {names[code]})")
            for name in _BACKTICKED.findall(line):
                if len(vocabulary & set(name.split("-"))) >= 2 and name not in set(names.values()) | _KNOWN_KEYS:
                    stale.append(f"{where}: `{name}` is no rule's name")
    assert not stale, "\n".join(stale)
