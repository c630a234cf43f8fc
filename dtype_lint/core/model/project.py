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
import collections
import contextlib
import dataclasses
import hashlib
import os
from typing import Callable, Iterable, Iterator, Protocol

from dtype_lint.core.finding import Step
from dtype_lint.core.guards import parse_quietly
from dtype_lint.frameworks.bases import unread
from dtype_lint.core.model.finder import ModuleFinder, module_name, package_root, search_path
from dtype_lint.core.model.summary import (ClassSummary, FunctionSummary, ModuleSummary, absolute_module, detail,
                                           has_star_import, summarize)

MAX_HOPS = 12
# Helpers handing a model on to helpers: followed this many calls deep.
_MAX_CALL_DEPTH = 4
_TREES_KEPT = 2
# Files over this size are generated (tables, bindings), not code a name resolves into.
MAX_SUMMARY_BYTES = 2 * 1024 * 1024


class SummaryStore(Protocol):
    """Where summaries persist by key (content digest and module name)."""

    def get_summary(self, key: str) -> dict | None: ...

    def put_summary(self, key: str, data: dict) -> None: ...


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
    environment's search path (``python``, ``interpreter``: see
    :func:`~dtype_lint.core.model.finder.located`), kept by path and content digest."""

    def __init__(self, src: tuple[str, ...] = (), python: str | None = None, interpreter: str | None = None) -> None:
        self.src = tuple(os.path.abspath(r) for r in src)
        self.finder = ModuleFinder(self.src + search_path(python, interpreter))
        self._summaries: dict[str, tuple[tuple[int, int], str, ModuleSummary]] = {}
        # Sets that collect the files consulted: the lint being recorded, and each
        # remembered answer being computed (so a later hit consults the same files).
        self._collecting: list[set[str]] = []
        self._memos: dict[str, dict] = {}
        # A file's stamp is read once per epoch: a run is one epoch (files do not change
        # under it); an editor's server starts one per lint (:meth:`new_epoch`).
        self._epoch = 0
        self._checked: dict[str, int] = {}
        self._trees: collections.OrderedDict[str, ast.Module] = collections.OrderedDict()
        # Where summaries persist between runs, by content (the results cache's folder):
        # set by the front-end that has one; None keeps them in this process only.
        self.store: SummaryStore | None = None

    def new_epoch(self) -> None:
        """Look at the files' stamps again (a file may have been saved since)."""
        self._epoch += 1

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
            if entry is None or self._load(path) is not entry:
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
        entry = self._summaries.get(path)
        if entry is not None and self._checked.get(path) == self._epoch:
            return entry
        try:
            st = os.stat(path)
        except OSError:
            return None
        self._checked[path] = self._epoch
        stamp = (st.st_mtime_ns, st.st_size)
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
        summary = self._stored(digest, named)
        if path in self._summaries:
            self._memos.clear()  # a file changed (an editor saved it): answers may differ
            self._trees.pop(path, None)
        if summary is None:
            # The tree is kept with the last few: a question that summarises a file often
            # asks next about a function's body there (tree()), which then needs no parse.
            text = data.decode("utf-8", "replace")
            tree = parse_quietly(text)
            summary = summarize(text, *named, tree=tree)
            if tree is not None and "\ufffd" not in text:  # as tree() would parse the bytes
                self._keep_tree(path, tree)
            if self.store is not None:
                self.store.put_summary(f"{digest}:{named[0]}:{int(named[1])}", summary.as_json())
        self._summaries[path] = entry = (stamp, digest, summary)
        return entry

    def learn(self, path: str, data: bytes, text: str, tree: ast.Module) -> None:
        """A file the linter has just read and parsed (``data``, decoded as ``text``): its
        summary is made from that tree now, so that the files importing it need not parse
        it again. Only where the text is what :meth:`_load` would parse, and the file is
        still as it was read."""
        path = os.path.abspath(path)
        entry = self._summaries.get(path)
        if (entry is not None and self._checked.get(path) == self._epoch) or text != data.decode("utf-8", "replace"):
            return
        try:
            st = os.stat(path)
        except OSError:
            return
        stamp = (st.st_mtime_ns, st.st_size)
        if st.st_size != len(data) or (entry is not None and entry[0] == stamp) or st.st_size > MAX_SUMMARY_BYTES:
            return
        digest = hashlib.blake2b(data, digest_size=16).hexdigest()
        named = module_name(path, self.src) or ("", False)
        summary = self._stored(digest, named)
        if summary is None:
            summary = summarize(text, *named, tree=tree)
            if self.store is not None:
                self.store.put_summary(f"{digest}:{named[0]}:{int(named[1])}", summary.as_json())
        if entry is not None:
            self._memos.clear()
            self._trees.pop(path, None)
        self._checked[path] = self._epoch
        self._summaries[path] = (stamp, digest, summary)

    def _stored(self, digest: str, named: tuple[str, bool]) -> ModuleSummary | None:
        """A summary of the same content and module name kept by an earlier run."""
        if self.store is None:
            return None
        data = self.store.get_summary(f"{digest}:{named[0]}:{int(named[1])}")
        try:
            return ModuleSummary.from_json(data) if data is not None else None
        except (KeyError, TypeError, AttributeError):
            return None  # an entry of another layout: summarised again

    def tree(self, path: str) -> ast.Module:
        """A summarised file's ast, parsed again when a function's body is first asked
        about (a few files per run); the last few are kept."""
        if path in self._trees:
            self._trees.move_to_end(path)
            return self._trees[path]
        try:
            with open(path, "rb") as handle:
                tree = parse_quietly(handle.read())
        except OSError:
            tree = None
        tree = tree or ast.Module(body=[], type_ignores=[])
        self._keep_tree(path, tree)
        return tree

    def _keep_tree(self, path: str, tree: ast.Module) -> None:
        self._trees[path] = tree
        self._trees.move_to_end(path)
        if len(self._trees) > _TREES_KEPT:
            self._trees.popitem(last=False)


@dataclasses.dataclass
class FileView:
    """The project model as one linted file sees it."""

    model: ProjectModel
    module: str
    is_package: bool
    root: str
    path: str = ""
    _own: tuple[str, ModuleSummary, ast.Module | None] | None = None
    _local: dict[str, Definition | None] = dataclasses.field(default_factory=dict)
    _starless: str | None = None  # the last text found to have no star import

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
            self._own = (text, summarize(text, self.module, self.is_package, tree), tree)
            self._local.clear()
        return self._own[1]

    def local(self, text: str, dotted: str, tree: ast.Module | None = None) -> Definition | None:
        """A class or function of the linted text itself, or else of another file (a
        name the file does not bind may come from one of its star imports)."""
        summary = self.own(text, tree)
        if dotted in self._local:
            return self._local[dotted]
        node = summary.classes.get(dotted) or summary.functions.get(dotted)
        if node is not None:
            found = Definition(self.path, summary, dotted, node)
        elif dotted in summary.aliases:
            # `shrink = precision.lower_each` at module level: what the name is bound to,
            # a name of this file or one it imports (a cycle of aliases ends at None).
            self._local[dotted] = None
            target = summary.aliases[dotted]
            if target.partition(".")[0] in summary.imports:
                found = self.resolve(qualify(summary, target))
            else:
                found = self.local(text, target, tree) if "." not in target else None
        elif "." in dotted:
            found = self.resolve(dotted)
        else:
            found = next((found for found in map(self.resolve, self.starred(dotted, text, tree)) if found), None)
        self._local[dotted] = found
        return found

    def starred(self, name: str, text: str, tree: ast.Module | None = None) -> list[str]:
        """Where a name the linted ``text`` uses without binding it may come from: its star
        imports (``from ..layers import *``). Most files have none, and their own summary
        is not needed for it."""
        if self._own is None or self._own[0] is not text:
            if self._starless is not text and not has_star_import(text):
                self._starless = text
            if self._starless is text:
                return []
        return [f"{module}.{name}" for module in self.own(text, tree).stars]

    # -- resolution ------------------------------------------------------------------

    def resolve(self, dotted: str) -> Definition | None:
        """The class or function an absolute dotted name ends at, in another file;
        remembered with the files it took. Names in frameworks that hold no model class
        and no casting helper (NumPy, JAX, torch outside ``torch.nn`` and its datasets)
        are not read."""
        if unread(dotted):
            return None
        memo = self.model.memo(self.root)
        key = ("resolve", dotted)
        if key in memo and self.model.fresh(memo[key][1]):
            self.model.consult(memo[key][1])
            return memo[key][0]
        with self.model.tracking() as files:
            found = self._resolve(dotted, set())
        self.model.memo(self.root)[key] = (found, frozenset(files))
        return found

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


    def cast_path(self, found: Definition, slot: int | str, depth: int = 0) -> CastPath | None:
        """How the value passed to a function as ``slot`` (a position or a keyword)
        reaches a low-precision cast, in the function itself or in the helpers it hands
        the value to (in any file); None where it does not. Only the parameters asked
        about are followed; each answer is remembered with the files it took."""
        param = _parameter(found, slot)
        if param is None or depth > _MAX_CALL_DEPTH:
            return None
        memo = self.model.memo(self.root)
        key = ("cast", found.path, found.name, param)
        if key in memo and self.model.fresh(memo[key][1]):
            self.model.consult(memo[key][1])
            return memo[key][0]
        memo[key] = (None, frozenset())  # a cycle ends here
        with self.model.tracking() as files:
            path = self._cast_path(found, found.node, param, depth)  # type: ignore[arg-type]
        self.model.memo(self.root)[key] = (path, frozenset(files))
        return path

    def _cast_path(self, found: Definition, node: FunctionSummary, param: str, depth: int) -> CastPath | None:
        if node.casts is None or node.passes is None:
            detail(node, self._tree_of(found), found.name)
        cast = node.casts.get(param)  # type: ignore[union-attr]
        if cast is not None:
            step = found.step(f"{found.name}() casts its parameter `{param}` ({cast[2]})", cast[:2])
            return CastPath(cast[3], (step,), found)
        for callee, slot, line, column in node.passes.get(param, []):  # type: ignore[union-attr]
            target = self._callee(found, callee)
            through = self.cast_path(target, slot, depth + 1) if target is not None else None
            if through is not None:
                here = found.step(f"{found.name}() passes `{param}` to {callee}()", [line, column])
                # the dtype, where the callee takes it from a parameter, is the one this
                # function passes on under the same name
                return CastPath(through.dtype_param, (here, *through.steps), through.caster)
        return None

    def returns_local(self, found: Definition) -> tuple[str, Step] | None:
        """What callable of its own a function (of another file) returns, a lambda or a
        local function or class (a factory whose product pickle cannot import), and the
        step that shows where; None where it returns none."""
        if not isinstance(found.node, FunctionSummary):
            return None
        if found.node.returns is None:
            detail(found.node, self._tree_of(found), found.name)
        self.model.consult((found.path,))
        if not found.node.returns:
            return None
        line, column, what = found.node.returns
        return what, found.step(f"{found.name}() returns {what}", [line, column])

    def casts_back(self, found: Definition, depth: int = 0) -> bool:
        """Whether a function of another file, or a class's ``forward``/``__call__``,
        casts a value back to a dtype that follows something (``.to(x.dtype)``,
        ``type_as``): a float32 value handed to it comes back in the inputs' dtype. A
        class that defines neither inherits its base's, in whichever file that is."""
        memo = self.model.memo(self.root)
        key = ("casts back", found.path, found.name)
        if key in memo and self.model.fresh(memo[key][1]):
            self.model.consult(memo[key][1])
            return memo[key][0]
        memo[key] = (False, frozenset())  # a cycle ends here
        with self.model.tracking() as files:
            self.model.consult((found.path,))
            answer = self._casts_back(found, depth)
        self.model.memo(self.root)[key] = (answer, frozenset(files))
        return answer

    def _casts_back(self, found: Definition, depth: int) -> bool:
        from dtype_lint.frameworks.casts import casts_back_call  # the layer facts' own test

        body = _top_level(self._tree_of(found), found.name)
        if isinstance(body, ast.ClassDef):
            forward = next((m for m in body.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
                            and m.name in ("forward", "__call__")), None)
            if forward is None:
                return depth < MAX_HOPS and any(self.casts_back(base, depth + 1) for base in self._bases(found))
            body = forward
        return body is not None and any(isinstance(n, ast.Call) and casts_back_call(n) for n in ast.walk(body))

    def calls_in_bases(self, found: Definition, method: str) -> list[ast.Call]:
        """The calls ``self.<method>(...)`` written in the classes a class derives from
        that are in other files, up its hierarchy: where a base calls the method that the
        class overrides, those calls are the override's callers."""
        calls: list[ast.Call] = []
        todo, seen = list(self._bases(found)), {(found.path, found.name)}
        while todo and len(seen) <= MAX_HOPS:
            base = todo.pop()
            if (base.path, base.name) in seen:
                continue
            seen.add((base.path, base.name))
            self.model.consult((base.path,))
            todo.extend(self._bases(base))
            if base.path == found.path:
                continue  # the linted file's own classes are the layer facts'
            body = _top_level(self._tree_of(base), base.name)
            if isinstance(body, ast.ClassDef):
                calls.extend(node for node in ast.walk(body) if isinstance(node, ast.Call)
                             and isinstance(node.func, ast.Attribute) and node.func.attr == method
                             and isinstance(node.func.value, ast.Name) and node.func.value.id == "self")
        return calls

    def _bases(self, found: Definition) -> Iterator[Definition]:
        """The classes a class of another file derives from, where they resolve: in its
        own file or through its imports."""
        if not isinstance(found.node, ClassSummary):
            return
        for written in found.node.bases:
            node = found.module.classes.get(written)
            if node is not None:
                yield Definition(found.path, found.module, written, node)
                continue
            for candidate in found.candidates(written):
                base = self.resolve(candidate) if "." in candidate else None
                if base is not None:
                    yield base
                    break

    def _tree_of(self, found: Definition) -> ast.Module:
        """The ast a definition was summarised from: the linted text's own, or its file's."""
        if self._own is not None and found.module is self._own[1]:
            return self._own[2] if self._own[2] is not None else ast.parse(self._own[0])
        return self.model.tree(found.path)

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


def _top_level(tree: ast.Module, name: str) -> ast.AST | None:
    """The module-level class or function of that name (the last one bound)."""
    found = None
    for stmt in tree.body:
        if isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == name:
            found = stmt
    return found


def _parameter(found: Definition, slot: int | str) -> str | None:
    """The parameter a positional or keyword argument binds (None for a class)."""
    params = found.node.params if isinstance(found.node, FunctionSummary) else []
    if isinstance(slot, int):
        return params[slot] if slot < len(params) else None
    return slot if slot in params else None


_MODELS: dict[tuple[tuple[str, ...], str | None, str | None], ProjectModel] = {}


def project_model(src: tuple[str, ...] = (), python: str | None = None, interpreter: str | None = None) -> ProjectModel:
    """The process's model for these settings: every front-end in a process shares it."""
    key = (tuple(os.path.abspath(r) for r in src), python, interpreter)
    if key not in _MODELS:
        _MODELS[key] = ProjectModel(*key)
    return _MODELS[key]
