"""Resolve names across files by their summaries, and remember what each lint consulted.

A :class:`ProjectModel` lives as long as the process (a run, a flake8 or mypy session, a
language server) and is shared by every file it lints, like astroid's manager: each
file it reads is summarised once per content. A lint asks through the
:class:`FileView` of the linted file, which knows the file's own module name (for its
relative imports) and package root (where its first-party imports are found first).

Everything is bounded: a name is followed through at most :data:`MAX_HOPS` re-exports,
bases and helpers, each dotted name once per question, so cycles and deep hierarchies
end; a name that cannot be resolved is unknown, never an error.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import hashlib
import os
from typing import Callable, Iterable, Iterator

from dtype_lint.core.finding import Step
from dtype_lint.core.model.finder import ModuleFinder, module_name, package_root, search_path
from dtype_lint.core.model.summary import ClassSummary, FunctionSummary, ModuleSummary, absolute_module, summarize

MAX_HOPS = 12
# Files over this size are generated (tables, bindings), not code a name resolves into.
MAX_SUMMARY_BYTES = 2 * 1024 * 1024


@dataclasses.dataclass(frozen=True)
class CastPath:
    """How a function's parameter reaches a low-precision cast: the parameter that gives
    the dtype (empty when the cast spells it), the steps, and the function that casts."""

    dtype_param: str
    steps: tuple[Step, ...]
    caster: "Definition"


@dataclasses.dataclass(frozen=True)
class Definition:
    """A class or function found in another file."""

    path: str
    module: ModuleSummary
    name: str
    node: ClassSummary | FunctionSummary

    def step(self, message: str, at: list[int] | None = None) -> Step:
        line, column = at if at else (self.node.line, self.node.column)
        return Step(shown(self.path), line, column, message)

    def qualify(self, dotted: str) -> str:
        """A name as the defining file writes it, made absolute through its imports."""
        return qualify(self.module, dotted)

    def candidates(self, dotted: str) -> list[str]:
        """What a name the defining file writes may stand for: through its imports, or,
        where the file does not bind its head, through each of its star imports."""
        qualified = qualify(self.module, dotted)
        if qualified != dotted or not self.module.stars:
            return [qualified]
        return [dotted] + [f"{star}.{dotted}" for star in self.module.stars]


def shown(path: str) -> str:
    """A path as findings show it: relative to the working folder when it is under it
    (as the linted files' own paths are given), else absolute (an installed package)."""
    if not os.path.isabs(path):
        return path
    relative = os.path.relpath(path)
    return path if relative.startswith(os.pardir) else relative


def qualify(summary: ModuleSummary, dotted: str) -> str:
    head, _, tail = dotted.partition(".")
    if head in summary.imports:
        full = summary.imports[head]
    elif head in summary.classes or head in summary.functions or head in summary.aliases:
        full = f"{summary.name}.{head}"
    else:
        return dotted
    return f"{full}.{tail}" if tail else full


class ProjectModel:
    """Summaries of the files names resolve into, found under ``src`` roots and an
    interpreter's search path, kept by path and content digest."""

    def __init__(self, src: tuple[str, ...] = (), python: str | None = None) -> None:
        self.src = tuple(os.path.abspath(r) for r in src)
        self.finder = ModuleFinder(self.src + search_path(python))
        self._summaries: dict[str, tuple[tuple[int, int], str, ModuleSummary]] = {}
        # Sets that collect the files consulted: the lint being recorded, and each
        # remembered answer being computed (so a later hit consults the same files).
        self._collecting: list[set[str]] = []
        self._memos: dict[str, dict] = {}

    # -- recording -------------------------------------------------------------------

    def record(self) -> set[str]:
        """Start recording the files a lint consults; the set fills until the next call."""
        consulted: set[str] = set()
        self._collecting = [consulted]
        return consulted

    @contextlib.contextmanager
    def tracking(self) -> Iterator[set[str]]:
        files: set[str] = set()
        self._collecting.append(files)
        try:
            yield files
        finally:
            self._collecting.pop()  # by position: sets that are equal are not the same

    def consult(self, files: Iterable[str]) -> None:
        for collecting in self._collecting:
            collecting.update(files)

    def memo(self, root: str) -> dict:
        """Answers remembered for files under one package root, until a file changes."""
        return self._memos.setdefault(root, {})

    def fresh(self, files: Iterable[str]) -> bool:
        """Whether the files an answer took are as they were read (an editor may have
        saved one since); if not, every remembered answer is dropped."""
        for path in files:
            entry = self._summaries.get(path)
            try:
                st = os.stat(path)
            except OSError:
                st = None
            if entry is None or st is None or entry[0] != (st.st_mtime_ns, st.st_size):
                self._memos.clear()
                return False
        return True

    def digest(self, path: str) -> str | None:
        """The content digest of a file as last summarised (or now), None if unreadable."""
        entry = self._load(path)
        return entry[1] if entry else None

    # -- files -----------------------------------------------------------------------

    def view(self, path: str) -> "FileView":
        named = module_name(path, self.src)
        folder = os.path.dirname(os.path.abspath(path)) if path else os.getcwd()
        return FileView(self, named[0] if named else "", bool(named and named[1]), package_root(folder), path)

    def summary(self, path: str) -> ModuleSummary | None:
        entry = self._load(path)
        if entry is None:
            return None
        self.consult((path,))
        return entry[2]

    def _load(self, path: str) -> tuple[tuple[int, int], str, ModuleSummary] | None:
        try:
            st = os.stat(path)
        except OSError:
            return None
        stamp = (st.st_mtime_ns, st.st_size)
        entry = self._summaries.get(path)
        if entry is not None and entry[0] == stamp:
            return entry
        if st.st_size > MAX_SUMMARY_BYTES:
            return None
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            return None
        digest = hashlib.blake2b(data, digest_size=16).hexdigest()
        named = module_name(path, self.src) or ("", False)
        summary = summarize(data.decode("utf-8", "replace"), *named)
        if path in self._summaries:
            self._memos.clear()  # a file changed (an editor saved it): answers may differ
        self._summaries[path] = entry = (stamp, digest, summary)
        return entry


@dataclasses.dataclass
class FileView:
    """The project model as one linted file sees it."""

    model: ProjectModel
    module: str
    is_package: bool
    root: str
    path: str = ""
    _own: tuple[str, ModuleSummary] | None = None

    @property
    def package(self) -> str:
        return self.module if self.is_package else self.module.rpartition(".")[0]

    def absolute(self, module: str | None, level: int) -> str | None:
        """The module a relative import of this file names."""
        return absolute_module(module, level, self.package) if self.module else None

    def own(self, text: str, tree: ast.Module | None = None) -> ModuleSummary:
        """The summary of the text being linted (an editor's buffer may not be saved);
        ``tree``: its ast, where the caller has it."""
        if self._own is None or self._own[0] is not text:
            self._own = (text, summarize(text, self.module, self.is_package, tree))
        return self._own[1]

    def local(self, text: str, dotted: str, tree: ast.Module | None = None) -> Definition | None:
        """A class or function of the linted text itself, or else of another file (a
        name the file does not bind may come from one of its star imports)."""
        summary = self.own(text, tree)
        node = summary.classes.get(dotted) or summary.functions.get(dotted)
        if node is not None:
            return Definition(self.path, summary, dotted, node)
        if "." in dotted:
            return self.resolve(dotted)
        return next((found for found in map(self.resolve, self.starred(dotted)) if found), None)

    def starred(self, name: str) -> list[str]:
        """Where a name the linted file uses without binding it may come from: its star
        imports (``from ..layers import *``), once the file's own summary is known."""
        return [f"{module}.{name}" for module in self._own[1].stars] if self._own else []

    # -- resolution ------------------------------------------------------------------

    def resolve(self, dotted: str) -> Definition | None:
        """The class or function an absolute dotted name ends at, in another file."""
        return self._resolve(dotted, set())

    def _resolve(self, dotted: str, seen: set[str]) -> Definition | None:
        if dotted in seen or len(seen) > MAX_HOPS:
            return None
        seen.add(dotted)
        parts = dotted.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            path = self.model.finder.find(".".join(parts[:cut]), self.root)
            if path is None:
                continue
            summary = self.model.summary(path)
            return self._lookup(path, summary, parts[cut:], seen) if summary else None
        return None

    def _lookup(self, path: str, summary: ModuleSummary, rest: list[str], seen: set[str]) -> Definition | None:
        name, tail = rest[0], rest[1:]
        # An import first: a class of the same name is then most often the fallback of a
        # failed optional import (`try: from .x import A` / `except: class A: ...`).
        if name in summary.imports:
            found = self._resolve(".".join([summary.imports[name], *tail]), seen)
            if found is not None or tail:
                return found
        if not tail and name in summary.classes:
            return Definition(path, summary, name, summary.classes[name])
        if not tail and name in summary.functions:
            return Definition(path, summary, name, summary.functions[name])
        if name in summary.imports:
            return None
        if name in summary.aliases:
            return self._resolve(".".join([qualify(summary, summary.aliases[name]), *tail]), seen)
        if summary.name:
            found = self._resolve(".".join([summary.name, *rest]), seen) if tail else None
            if found:
                return found  # a submodule: `pkg.sub.Cls` where `pkg/sub.py` exists
        for star in summary.stars:
            found = self._resolve(".".join([star, *rest]), seen)
            if found:
                return found
        return None

    # -- questions -------------------------------------------------------------------

    def class_kinds(self, dotted: str, known: Callable[[str], set[str]]) -> tuple[frozenset[str], tuple[Step, ...]]:
        """What a class from another file is (``known`` says it of framework names), by
        its bases, and the steps that show it: each class on the way and its base."""
        memo = self.model.memo(self.root)
        if dotted in memo and self.model.fresh(memo[dotted][2]):
            kinds, steps, files = memo[dotted]
            self.model.consult(files)
        else:
            memo = self.model.memo(self.root)
            memo[dotted] = (frozenset(), (), frozenset())  # a cycle ends here
            with self.model.tracking() as files:
                kinds, steps = self._class_kinds(dotted, known)
            memo[dotted] = (kinds, steps, frozenset(files))
        return kinds, steps

    def _class_kinds(self, dotted: str, known: Callable[[str], set[str]]):
        kinds = known(dotted)
        if kinds:
            return frozenset(kinds), ()
        found = self.resolve(dotted)
        if found is None or not isinstance(found.node, ClassSummary):
            return frozenset(), ()
        for base in found.node.bases:
            for candidate in found.candidates(base):
                base_kinds, steps = self.class_kinds(candidate, known)
                if base_kinds:
                    return base_kinds, (found.step(f"{found.name} derives from {base}"), *steps)
        return frozenset(), ()


    def cast_params(self, found: Definition, depth: int = 0) -> dict[str, CastPath]:
        """The parameters a function casts to a low precision, itself or through the
        helpers it hands them to (in any file), each with how and the steps to the cast;
        remembered per function, with the files it took."""
        if not isinstance(found.node, FunctionSummary) or depth > MAX_HOPS:
            return {}
        memo = self.model.memo(self.root)
        key = ("casts", found.path, found.name)
        if key in memo and self.model.fresh(memo[key][1]):
            paths, files = memo[key]
            self.model.consult(files)
            return paths
        memo = self.model.memo(self.root)
        memo[key] = ({}, frozenset())  # a cycle ends here
        with self.model.tracking() as files:
            paths = self._cast_params(found, found.node, depth)
        memo[key] = (paths, frozenset(files))
        return paths

    def _cast_params(self, found: Definition, node: FunctionSummary, depth: int) -> dict[str, CastPath]:
        paths: dict[str, CastPath] = {}
        for name, cast in node.casts.items():
            step = found.step(f"{found.name}() casts its parameter `{name}` ({cast[2]})", cast[:2])
            paths[name] = CastPath(cast[3], (step,), found)
        for name, calls in node.passes.items():
            for callee, slot, line, column in calls:
                if name in paths:
                    break
                target = self._callee(found, callee)
                inner = self.cast_params(target, depth + 1) if target is not None else {}
                param = _parameter(target, slot) if target is not None else None
                if param in inner:
                    here = found.step(f"{found.name}() passes `{name}` to {callee}()", [line, column])
                    through = inner[param]
                    # the dtype, where the callee takes it from a parameter, is the one
                    # this function passes on under the same name
                    paths[name] = CastPath(through.dtype_param, (here, *through.steps), through.caster)
        return paths

    def _callee(self, caller: Definition, callee: str) -> Definition | None:
        """A function the caller's file calls, defined there or imported."""
        node = caller.module.functions.get(callee)
        if node is not None:
            return Definition(caller.path, caller.module, callee, node)
        for qualified in caller.candidates(callee):
            found = self.resolve(qualified) if "." in qualified else None
            if found is not None:
                return found
        return None


def _parameter(found: Definition, slot: int | str) -> str | None:
    """The parameter a positional or keyword argument binds."""
    params = found.node.params if isinstance(found.node, FunctionSummary) else []
    if isinstance(slot, int):
        return params[slot] if slot < len(params) else None
    return slot if slot in params else None


_MODELS: dict[tuple[tuple[str, ...], str | None], ProjectModel] = {}


def project_model(src: tuple[str, ...] = (), python: str | None = None) -> ProjectModel:
    """The process's model for these settings: every front-end in a process shares it."""
    key = (tuple(os.path.abspath(r) for r in src), python)
    if key not in _MODELS:
        _MODELS[key] = ProjectModel(*key)
    return _MODELS[key]
