"""Find the file that defines a dotted module name, as Python's import system would,
without importing: the linted file's package root first, then configured source roots,
then the search path of an interpreter (this one's ``sys.path`` by default)."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys

from dtype_lint.core.model import site_query

_SUFFIXES = (".py", ".pyi")


def class_like(qualified: str) -> bool:
    """A dotted name of another module's class by convention (``pkg.nets.Scorer``): the
    only names the project model is asked about, which bounds its work per file."""
    return "." in qualified and qualified.rsplit(".", 1)[-1][:1].isupper()


def standard_library(qualified: str) -> bool:
    """Whether a dotted name lies in the standard library, which the model does not read
    (site_query leaves its folders out of the roots)."""
    return qualified.split(".", 1)[0] in sys.stdlib_module_names


@functools.lru_cache(maxsize=4096)
def package_root(folder: str) -> str:
    """The folder above the outermost package holding ``folder`` (``folder`` itself when
    it is not a package): where ``import`` of the file's package starts."""
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return folder


def module_name(path: str, roots: tuple[str, ...] = ()) -> tuple[str, bool] | None:
    """``(dotted name, is a package's __init__)`` of the file at ``path``, relative to the
    first of ``roots`` holding it, else to its package root; None for a file with no
    importable name (a notebook, a stem that is not an identifier)."""
    absolute = os.path.abspath(path)
    stem, suffix = os.path.splitext(absolute)
    if suffix not in _SUFFIXES:
        return None
    base = next((r for r in roots if absolute.startswith(os.path.join(r, ""))), None)
    if base is None:
        base = package_root(os.path.dirname(absolute))
    parts = os.path.relpath(stem, base).split(os.sep)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    if not parts or not all(p.isidentifier() for p in parts):
        return None
    return ".".join(parts), is_package


@functools.lru_cache(maxsize=8)
def interpreter_path(python: str | None) -> tuple[str, ...]:
    """Where an interpreter finds installed packages (a project's virtual environment;
    None: the one running), asked once; empty when it cannot be run, so its packages
    are unknown, never an error."""
    if python is None:
        return tuple(site_query.package_paths())
    try:
        out = subprocess.run([python, site_query.__file__], capture_output=True, text=True, timeout=30,
                             check=True).stdout
        return tuple(json.loads(out))
    except (OSError, ValueError, subprocess.SubprocessError):
        return ()


def search_path(python: str | None) -> tuple[str, ...]:
    """Folders holding installed packages: ``python``'s, else the running interpreter's."""
    return tuple(os.path.abspath(p) for p in interpreter_path(python) if os.path.isdir(p))


class ModuleFinder:
    """Dotted module names to files, under a fixed list of roots, remembered."""

    def __init__(self, roots: tuple[str, ...]) -> None:
        self.roots = roots
        self._found: dict[tuple[str, str], str | None] = {}

    def find(self, module: str, first: str | None = None) -> str | None:
        """The file of ``module``, looked for under ``first`` (the linted file's package
        root) and then the roots; None where no root has it."""
        key = (module, first or "")
        if key not in self._found:
            roots = ((first,) if first else ()) + self.roots
            if first and os.path.basename(first) == module.split(".", 1)[0]:
                # The linted file's package sits in a namespace package (PEP 420: a
                # folder without __init__.py, `megatron/core/`) that the import names.
                roots = (os.path.dirname(first), *roots)
            self._found[key] = next((f for f in (_in_root(r, module) for r in roots) if f), None)
        return self._found[key]


def _in_root(root: str, module: str) -> str | None:
    base = os.path.join(root, *module.split("."))
    for candidate in [base + s for s in _SUFFIXES] + [os.path.join(base, "__init__" + s) for s in _SUFFIXES]:
        if os.path.isfile(candidate):
            return candidate
    return None
