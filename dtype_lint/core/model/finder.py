"""Find the file that defines a dotted module name, as Python's import system would,
without importing: the linted file's package root first, then configured source roots,
then the installed packages of an environment (this interpreter's ``sys.path`` by
default; a configured environment's as its files say, :mod:`.environment`)."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys

from dtype_lint.core.model import site_query
from dtype_lint.core.model.environment import Found, read_environment

_SUFFIXES = (".py", ".pyi")
# How long an interpreter the user chose may take to print its search path.
ASK_SECONDS = 30


def class_like(qualified: str) -> bool:
    """A dotted name of another module's class by convention (``pkg.nets.Scorer``): the
    only names the project model is asked about, which bounds its work per file."""
    return "." in qualified and qualified.rsplit(".", 1)[-1].lstrip("_")[:1].isupper()  # `_Loss` too


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
def located(python: str | None, interpreter: str | None = None) -> Found:
    """Where installed packages are found, once per process: asked of ``interpreter``,
    the one the user chose to run (``--python``, ``DTYPE_LINT_PYTHON``; a folder given
    there is read instead), else read from the environment ``python`` (the
    configuration's) names, which is never run, else the running interpreter's. Empty,
    with the reason, where none is found: its packages are unknown, never an error."""
    if interpreter and not os.path.isdir(interpreter):
        return _asked(interpreter)
    if interpreter or python:
        return read_environment(interpreter or python or "")
    return Found(tuple(site_query.package_paths()))


def _asked(interpreter: str) -> Found:
    try:
        out = subprocess.run([interpreter, site_query.__file__], capture_output=True, text=True, timeout=ASK_SECONDS,
                             stdin=subprocess.DEVNULL, check=True).stdout
    except subprocess.TimeoutExpired:
        return Found((), f"it did not answer within {ASK_SECONDS} s")
    except subprocess.CalledProcessError as exc:
        return Found((), f"it exited with status {exc.returncode}")
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        return Found((), f"cannot run it: {getattr(exc, 'strerror', None) or exc}")
    try:
        paths = json.loads(out)
    except ValueError:
        paths = None
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        return Found((), "its answer is not a list of folders")
    return Found(tuple(paths))


def search_path(python: str | None, interpreter: str | None = None) -> tuple[str, ...]:
    """Folders holding installed packages (see :func:`located`)."""
    return tuple(os.path.abspath(p) for p in located(python, interpreter).paths if os.path.isdir(p))


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
