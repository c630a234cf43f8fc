"""The parts of a LibCST call the rules read: an argument by position or keyword, the
callee's name."""

from __future__ import annotations

from dtype_lint.core.deferred import cst


def argument(call: cst.Call, position: int | None, keyword: str | None) -> cst.BaseExpression | None:
    """The expression passed as ``keyword=`` or at ``position`` (when no star-args precede it)."""
    positional = 0
    found = None
    for arg in call.args:
        if arg.keyword is not None:
            if keyword is not None and arg.keyword.value == keyword:
                return arg.value
        elif arg.star:
            positional = -1_000_000  # positions after *args are unknown
        else:
            if position is not None and positional == position:
                found = arg.value
            positional += 1
    return found


def has_star_kwargs(call: cst.Call) -> bool:
    return any(arg.star == "**" for arg in call.args)


def callee_name(call: cst.Call) -> str | None:
    """The callee's last name (``f`` of ``a.b.f(...)`` and of ``f(...)``), else None."""
    func = call.func
    return func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None


def method_name(call: cst.Call) -> str | None:
    return call.func.attr.value if isinstance(call.func, cst.Attribute) else None
