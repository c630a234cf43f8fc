"""The order files are linted in, within one process: a module's imports before it, so
that the project model learns their summaries from the linter's own parse of them
(:meth:`~dtype_lint.core.model.project.ProjectModel.learn`) instead of parsing them again
when a file that imports them asks. The findings do not depend on the order; only how
often a file is parsed does."""

from __future__ import annotations

import re

from dtype_lint.core.model.finder import module_name
from dtype_lint.core.reading import read_small
from dtype_lint.project.file_lint import MAX_FILE_BYTES

# `import a.b, c` and `from .a import b`: the modules a file may import (a text scan: a
# name in a string or a comment adds an edge, which only changes the order).
_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+\(?([\w., \t]*)|import[ \t]+([\w., \t]+))",
                     re.MULTILINE)


def dependency_order(paths: list[str], src: tuple[str, ...] = ()) -> list[int]:
    """The indices of ``paths``, each file after the files of ``paths`` it imports (as far
    as a text scan shows; in a cycle, the first one met first), otherwise as given."""
    modules: dict[str, int] = {}
    named: list[tuple[str, bool] | None] = []
    for index, path in enumerate(paths):
        found = module_name(path, src)
        named.append(found)
        if found is not None:
            modules[found[0]] = index
    imports: dict[int, list[int]] = {}
    for index, path in enumerate(paths):
        if named[index] is not None:
            imports[index] = [target for module in _imported(path, *named[index])  # type: ignore[misc]
                              if (target := modules.get(module)) is not None and target != index]
    order: list[int] = []
    state = [_UNSEEN] * len(paths)
    for start in range(len(paths)):
        if state[start] != _UNSEEN:
            continue
        state[start] = _OPEN
        stack = [(start, iter(imports.get(start, ())))]
        while stack:
            index, pending = stack[-1]
            target = next(pending, None)
            if target is None:
                stack.pop()
                state[index] = _DONE
                order.append(index)
            elif state[target] == _UNSEEN:  # an open one is a cycle: met first, linted first
                state[target] = _OPEN
                stack.append((target, iter(imports.get(target, ()))))
    return order


_UNSEEN, _OPEN, _DONE = 0, 1, 2


def _imported(path: str, module: str, is_package: bool) -> set[str]:
    """The dotted modules (and the submodules a ``from`` import may name) the file imports."""
    # Read as linting reads it: a FIFO, a device or a file over the limit (a repository
    # may hold any of them) is not waited on nor read without end; linting names it.
    data = read_small(path, MAX_FILE_BYTES)
    if data is None:
        return set()
    text = data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")  # lines as open() gives them
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for dots, base, names, plain in _IMPORT.findall(text):
        if plain:
            found.update(part.split()[0] for part in plain.split(",") if part.split())
            continue
        if dots:
            parts = package.split(".") if package else []
            parts = parts[:len(parts) - (len(dots) - 1)] if len(dots) > 1 else parts
            base = ".".join(filter(None, [*parts, base]))
        if base:
            found.add(base)
            found.update(f"{base}.{part.split()[0]}" for part in names.split(",") if part.split())
    return found
