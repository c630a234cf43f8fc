"""Lint a changed text from the findings of the text before it, where that gives exactly
what a whole lint would; elsewhere say so (None), and the caller lints the whole text.

The change is the run of lines between the longest common first and last lines of the
two texts. Two kinds are linted incrementally:

* **the same syntax tree** (comment or blank lines added or removed): the findings are
  the old ones, each line after the change moved by the number of lines added;
* **one top-level function's body**, where nothing else in the file can see it: no other
  unit names the function or what it defines, and it names no function, class or
  module-level binding of the file (rules follow those both ways: a callee's findings
  can depend on its callers), the file-wide facts the rules read
  (each finder's and sanitizer's ``file_facts``) are unchanged, and the change adds or
  removes no import, ``global`` or ``nonlocal``. Only that function (with the imports it
  names) is linted again, through the prefilter's cut
  (:func:`~dtype_lint.core.engine.lint_units`); the other units keep their findings.

Anything else (a change to imports, module-level names, a class, a header, a line with
``noqa`` or ``dtype-lint``, ``\\r`` line ends, a text that does not parse) gets None.
``tests/test_incremental.py`` checks the result equals a whole lint after random edits
of every fixture.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import re
import warnings
from typing import TYPE_CHECKING, Sequence

from dtype_lint.core import prefilter_switch
from dtype_lint.core.engine import lint_units, rule_classes
from dtype_lint.core.finding import Finding, Fix
from dtype_lint.core.units import Unit, binds, header_start, units

if TYPE_CHECKING:
    from dtype_lint.core.model.project import FileView
    from dtype_lint.core.options import Options
    from dtype_lint.core.rule import Rule, Selection

# Words in a changed line that may change what holds for the whole file.
_FILE_WIDE = re.compile(r"noqa|dtype-lint|\bimport\b|\bglobal\b|\bnonlocal\b", re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class _Change:
    """Old lines ``first..old_end`` became new lines ``first..new_end`` (1-based,
    inclusive; an end below ``first`` is no line)."""

    first: int
    old_end: int
    new_end: int

    @property
    def delta(self) -> int:
        return self.new_end - self.old_end

    def moved(self, line: int) -> int:
        """An old line's number in the new text (a line after the change)."""
        return line + self.delta if line > self.old_end else line

    def before(self, line: int) -> int:
        """A new line's number in the old text (a line outside the change)."""
        return line - self.delta if line > self.new_end else line


def relint(old: str, findings: Sequence[Finding], new: str, path: str, rules: Sequence[type[Rule]] | Selection,
           options: Options, view: FileView | None = None) -> list[Finding] | None:
    """The findings of ``new``, given those of ``old`` (a whole lint's, with the same
    path, rules and options), or None where only a whole lint will do. ``view``: the
    project model as the file sees it (lint_source's)."""
    if "\r" in old or "\r" in new or not prefilter_switch.enabled():
        return None
    old_lines, new_lines = old.split("\n"), new.split("\n")
    change = _change(old_lines, new_lines)
    changed = old_lines[change.first - 1:change.old_end] + new_lines[change.first - 1:change.new_end]
    if any(_FILE_WIDE.search(line) for line in changed):
        return None
    old_tree, new_tree = tree_of(old), tree_of(new)
    if old_tree is None or new_tree is None:
        return None
    # Only comment or blank lines changed: the tree may be the same (not where they lie
    # inside a string).
    if all(not line.strip() or line.lstrip().startswith("#") for line in changed) and _dump(old) == _dump(new):
        return _moved(findings, change) if _whole_lines(change) and _same_facts(
            old, old_tree, new, new_tree, path, rule_classes(rules), options) else None
    return _function_body(old, old_tree, findings, new, new_tree, change, path, rules, options, view)


def _change(old: list[str], new: list[str]) -> _Change:
    shortest = min(len(old), len(new))
    first = 0
    while first < shortest and old[first] == new[first]:
        first += 1
    last = 0
    while last < shortest - first and old[-1 - last] == new[-1 - last]:
        last += 1
    return _Change(first + 1, len(old) - last, len(new) - last)


@functools.lru_cache(maxsize=2)  # the new text is the old one of the next change
def tree_of(text: str) -> ast.Module | None:
    """The text's ``ast`` (not to be changed: it is shared), None where CPython rejects
    the text."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # CPython's SyntaxWarnings are not ours to print
            return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


@functools.lru_cache(maxsize=2)
def _dump(text: str) -> str:
    return ast.dump(tree_of(text))  # type: ignore[arg-type]


def _whole_lines(change: _Change) -> bool:
    """Lines only added or only removed: every other line keeps its columns."""
    return change.old_end < change.first or change.new_end < change.first


def _same_facts(old: str, old_tree: ast.Module, new: str, new_tree: ast.Module, path: str,
                rules: Sequence[type[Rule]], options: Options) -> bool:
    """Whether what the rules read of the whole file is unchanged (comments count: some
    facts are read from the text)."""
    return all(rule.file_facts(old_tree, old, options, path) == rule.file_facts(new_tree, new, options, path)
               for rule in rules)


def _moved(findings: Sequence[Finding], change: _Change) -> list[Finding] | None:
    """The findings with the lines after the change moved; None if one touches or spans
    the change (its message or fix could take it in)."""
    line = change.moved
    out = []
    for f in findings:
        spans = [(f.line, f.end_line)] + [(e.line, e.end_line) for e in (f.fix.edits if f.fix else ())]
        if not all(end < change.first or start > change.old_end for start, end in spans):
            return None
        fix = f.fix and Fix(f.fix.applicability, tuple(
            dataclasses.replace(e, line=line(e.line), end_line=line(e.end_line)) for e in f.fix.edits))
        out.append(dataclasses.replace(f, line=line(f.line), end_line=line(f.end_line), fix=fix))
    return sorted(out)


def _function_body(old: str, old_tree: ast.Module, findings: Sequence[Finding], new: str, new_tree: ast.Module,
                   change: _Change, path: str, rules: Sequence[type[Rule]] | Selection,
                   options: Options, view: FileView | None = None) -> list[Finding] | None:
    old_units, new_units = units(old_tree.body), units(new_tree.body)
    if len(old_units) != len(new_units):
        return None
    index = _holding(new_units, change.first, max(change.first, change.new_end))
    if index is None or _holding(old_units, change.first, max(change.first - 1, change.old_end)) != index:
        return None
    old_unit, new_unit = old_units[index], new_units[index]
    if not (_body_change(old_unit, change) and _body_change(new_unit, change)):
        return None
    for before, after in zip(old_units, new_units):  # the others: the same lines, moved
        if before is not old_unit and (after.start, after.end) != _shifted(before, change):
            return None
    # What the function defines, and the words of its old and new text.
    defined = binds(old_unit) | binds(new_unit)
    words = _words(old, old_unit) | _words(new, new_unit)
    imports = []
    for position, unit in enumerate(new_units):
        if position == index:
            continue
        if isinstance(unit.node, (ast.Import, ast.ImportFrom)):
            if binds(unit) & words:
                imports.append(unit)
        elif binds(unit) & words or defined & _words(new, unit):
            return None
    if not _same_facts(old, old_tree, new, new_tree, path, rule_classes(rules), options):
        return None
    relinted = [new_unit, *imports]
    fresh = lint_units(new, path, rules, options, frozenset(u.start for u in relinted), new_tree, view)
    if fresh is None:
        return None
    # The relinted units' lines, new and old: their findings are the fresh ones.
    again = [(u.start, u.end) for u in relinted]
    was = [(old_unit.start, old_unit.end)] + [(change.before(u.start), change.before(u.end)) for u in imports]
    moved = _moved([f for f in findings if not any(s <= f.line <= e for s, e in was)], change)
    if moved is None:
        return None
    return sorted(moved + [f for f in fresh if any(s <= f.line <= e for s, e in again)])


def _holding(units: list[Unit], first: int, last: int) -> int | None:
    """The index of the unit holding lines ``first..last``, if one does."""
    for index, unit in enumerate(units):
        if unit.start <= first and last <= unit.end:
            return index
    return None


def _body_change(unit: Unit, change: _Change) -> bool:
    """Whether the unit is a top-level function and the change lies in its body (on
    lines of their own: decorators, name and parameters are unchanged)."""
    node = unit.node
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    body = header_start(node.body[0])
    return body > node.lineno and change.first >= body


def _shifted(unit: Unit, change: _Change) -> tuple[int, int]:
    return change.moved(unit.start), change.moved(unit.end)


def _words(text: str, unit: Unit) -> set[str]:
    return set(re.findall(r"[A-Za-z_]\w*", "\n".join(text.split("\n")[unit.start - 1:unit.end])))

