"""The base class of every rule: a LibCST visitor that carries its own docs and examples."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, ClassVar

from dtype_lint.core.deferred import cst
from dtype_lint.core.finding import Step
from dtype_lint.core.shapes import Prefilter
from dtype_lint.rules.catalog import RuleDoc
from dtype_lint.rules.options import Options

if TYPE_CHECKING:
    from dtype_lint.core.context import FileContext


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
    # the fix: (old node, new node) pairs, and the imports the new nodes need
    replace: tuple[tuple[cst.CSTNode, cst.CSTNode], ...]
    applicability: str | None
    imports: tuple[tuple[str, str | None], ...] = ()
    flow: tuple[Step, ...] = ()  # where the evidence is, when elsewhere (Finding.flow)


class Rule:
    """A read-only LibCST visitor (``visit_<Node>`` and ``leave_<Node>`` methods) run by
    :func:`dtype_lint.core.traversal.walk`, with everything else about the rule.

    Subclasses set ``doc``, ``message``, ``fix`` ("safe", "unsafe" or None), the options
    they read, and valid and invalid examples (tests and docs are made from them), and
    override :meth:`prefilter`. A module ``dtlNNN_<name>.py`` holding one in a family
    folder of :mod:`dtype_lint.rules` is all it takes to add a rule.
    """

    doc: ClassVar[RuleDoc]
    message: ClassVar[str]
    fix: ClassVar[str | None] = None
    # False: nothing is reported in test code (core.roles), whose dtypes are the test's.
    reports_in_tests: ClassVar[bool] = True
    options_used: ClassVar[tuple[str, ...]] = ()
    valid: ClassVar[tuple[str, ...]] = ()
    invalid: ClassVar[tuple[Invalid, ...]] = ()

    @classmethod
    def prefilter(cls, options: Options) -> Prefilter | None:
        """What a unit of a file must hold for this rule to find something in it (see
        :class:`~dtype_lint.core.shapes.Prefilter`). None, the default: the rule's files
        are parsed whole, so a new rule can start without one."""
        return None

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
        also_replace: tuple[tuple[cst.CSTNode, cst.CSTNode], ...] = (),
        imports: tuple[tuple[str, str | None], ...] = (),
        flow: tuple[Step, ...] = (),
    ) -> None:
        """Report ``node``; a fix replaces ``replace``'s old node with its new one (and
        ``also_replace``'s, in the same fix), adding ``imports`` (``(module, name)``, or
        ``(module, None)`` for ``import module``) where the file lacks them. ``flow``: the
        places elsewhere that show the hazard (another file's constructor, helper, base)."""
        if not self.reports_in_tests:
            from dtype_lint.core.roles import roles

            if roles(self.ctx, self.options).test_code():
                return
        self._reports.append(
            Report(
                self.doc.code,
                self.doc.name,
                node,
                message or self.message,
                (replace, *also_replace) if replace is not None else (),
                self.fix if replace is not None else None,
                imports,
                flow,
            )
        )
