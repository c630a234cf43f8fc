"""Schedulers that keep a callable (``POLICY.md`` F2.1: a callable kept as a scheduler): a
``LambdaLR`` (or ``MultiplicativeLR``) over a local function or a lambda, which a function
hands back to its caller (a scheduler factory, a Lightning ``configure_optimizers``). The
trainer that receives it keeps it in its state, which checkpoints and spawned processes
(``ddp_spawn``) pickle. Stored on a module, the same scheduler is an attribute like any
other (:mod:`dtype_lint.concepts.kept`, where these classes are carriers)."""

from __future__ import annotations

import re

from dtype_lint.concepts.crossing import Owner
from dtype_lint.concepts.kept import site_of
from dtype_lint.core.deferred import cst
from dtype_lint.core.rule import Finder
from dtype_lint.core.shapes import Prefilter
from dtype_lint.core.traversal import descendants

# The schedulers of torch.optim.lr_scheduler that keep the functions they are given.
LAMBDA_SCHEDULERS = frozenset({"LambdaLR", "MultiplicativeLR"})
_WORDS = re.compile(r"\b(?:LambdaLR|MultiplicativeLR)\b")
# Whether the receiver pickles the scheduler whole (ddp_spawn, torch.save of a trainer) or
# only its state_dict (which leaves plain functions out) is not seen: outside readers judged
# seven such factories real in one package and seven benign in another. A pattern.
_HANDED_BACK = Owner("a scheduler the function hands back (a trainer that pickles it whole, under ddp_spawn or "
                     "torch.save, fails)", "low",
                     "a returned scheduler: whether its receiver pickles it whole, not only its state_dict, is not seen")


class ReturnedSchedulers(Finder):
    """A lambda scheduler over a local callable that the function returns."""

    @classmethod
    def prefilter(cls, options) -> Prefilter:
        return Prefilter(lambda t, lc, u: bool(_WORDS.search(t)) and "return" in t, import_words=("lr_scheduler",
                                                                                                  "LambdaLR",
                                                                                                  "MultiplicativeLR"))

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is None or self.ctx.function is None:
            return
        for call in self._schedulers(node.value):
            for arg in call.args[1:]:
                if arg.keyword is None or arg.keyword.value == "lr_lambda":
                    self.found(site_of(arg.value, _HANDED_BACK, value=arg.value))

    def _schedulers(self, value: cst.BaseExpression, depth: int = 0) -> list[cst.Call]:
        """The lambda schedulers a returned value holds: built in it, or bound to a name it
        holds (the binding in force where the function returns)."""
        found = []
        for node in descendants(value):
            if isinstance(node, cst.Call) and (self.ctx.resolve(node.func) or "").rsplit(".", 1)[-1] in LAMBDA_SCHEDULERS:
                found.append(node)
            elif isinstance(node, cst.Name) and depth < 3:
                bound = self.ctx.lookup_binding(node.value)
                if bound is not None and bound is not value:
                    found += self._schedulers(bound, depth + 1)
        return found
