"""The rule registry: every static rule, found in the rule packages, in code order.

A rule is a module ``dtlNNN_<name>.py`` in one of the family packages under
:mod:`dtype_lint.rules` (``float32/``, ``pickling/``, ``recast/``) that defines one
:class:`~dtype_lint.core.rule.Rule` subclass. Nothing else lists rules: adding the file
adds the rule to every front-end, the docs and the tests.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil

import dtype_lint.rules as rules_package
from dtype_lint.core.rule import Rule
from dtype_lint.core.ruledoc import RuleDoc
from dtype_lint.rules.codes import RULE_MODULE


def _discover() -> tuple[type[Rule], ...]:
    found: list[type[Rule]] = []
    for family in pkgutil.iter_modules(rules_package.__path__, rules_package.__name__ + "."):
        if not family.ispkg:
            continue
        package = importlib.import_module(family.name)
        for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
            if RULE_MODULE.match(info.name.rpartition(".")[2] + ".py"):
                module = importlib.import_module(info.name)
                found.extend(value for value in vars(module).values()
                             if isinstance(value, type) and issubclass(value, Rule)
                             and value.__module__ == module.__name__ and hasattr(value, "doc"))
    return tuple(sorted(found, key=lambda rule: rule.doc.code))


RULES: tuple[type[Rule], ...] = _discover()
RULES_BY_CODE: dict[str, type[Rule]] = {rule.doc.code: rule for rule in RULES}


def all_docs() -> dict[str, RuleDoc]:
    """Docs of every code, static rules and runtime checks, by code."""
    from dtype_lint.runtime.codes import RUNTIME_CHECKS

    docs = {rule.doc.code: dataclasses.replace(rule.doc, finds=rule.describe()) for rule in RULES}
    docs.update({doc.code: doc for doc in RUNTIME_CHECKS})
    return dict(sorted(docs.items()))
