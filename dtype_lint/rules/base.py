"""The base class of every rule: a LibCST visitor that carries its own docs and examples."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import libcst as cst

from dtype_lint.rules.catalog import RuleDoc
from dtype_lint.core.context import FileContext
from dtype_lint.rules.options import Options


@dataclasses.dataclass(frozen=True)
class Invalid:
    """An example the rule must flag; ``fixed`` is the code after its fix, if it has one."""

    code: str
    fixed: str | None = None


@dataclasses.dataclass
class Report:
    """What a rule found, before the engine turns nodes into positions."""

    code: str
    name: str
    node: cst.CSTNode
    message: str
    replace: tuple[cst.CSTNode, cst.CSTNode] | None
    applicability: str | None


class Rule(cst.BatchableCSTVisitor):
    """Subclasses set ``doc``, ``fix`` ("safe", "unsafe" or None), ``triggers`` (text a
    file must contain for the rule to have anything to find), ``message``, and examples."""

    doc: ClassVar[RuleDoc]
    message: ClassVar[str]
    fix: ClassVar[str | None] = None
    triggers: ClassVar[tuple[str, ...]] = ()
    options_used: ClassVar[tuple[str, ...]] = ()
    valid: ClassVar[tuple[str, ...]] = ()
    invalid: ClassVar[tuple[Invalid, ...]] = ()

    def __init__(self, ctx: FileContext, options: Options, reports: list[Report]) -> None:
        super().__init__()
        self.ctx = ctx
        self.options = options
        self._reports = reports

    def report(
        self,
        node: cst.CSTNode,
        message: str | None = None,
        replace: tuple[cst.CSTNode, cst.CSTNode] | None = None,
    ) -> None:
        self._reports.append(
            Report(
                self.doc.code,
                self.doc.name,
                node,
                message or self.message,
                replace,
                self.fix if replace is not None else None,
            )
        )
