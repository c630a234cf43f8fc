"""What the rules know about a file while it is traversed: imports, scopes and classes.

This replaces LibCST's ScopeProvider and QualifiedNameProvider, which cost several
parses per file: the rules only need import aliases resolved to dotted names, the
names bound locally inside functions, and which classes derive from a module or a
dataset. The engine calls :meth:`FileContext.enter` before and :meth:`FileContext.leave`
after every rule sees a node, so rules always read the scope the node is in.
"""

from __future__ import annotations

import ast
import dataclasses
import warnings
import functools
from typing import TYPE_CHECKING, Any, Callable, Iterable

import libcst as cst

from dtype_lint.core.model.finder import class_like
from dtype_lint.core.shapes import Index
from dtype_lint.frameworks.bases import TORCH_MODULE_BASES, framework_kinds

if TYPE_CHECKING:
    from dtype_lint.core.finding import Step
    from dtype_lint.core.model.project import FileView


@dataclasses.dataclass
class ClassInfo:
    """A class defined in the file."""

    name: str
    bases: tuple[str, ...]
    kinds: frozenset[str]  # subset of {"torch_module", "flax_module", "dataset"}
    local: bool  # defined inside a function
    fn_depth: int  # how many functions enclose the class


@dataclasses.dataclass
class Scope:
    """A function body (or the module), with the names it binds to local callables."""

    node: cst.CSTNode
    name: str
    aliases: dict[str, str] = dataclasses.field(default_factory=dict)
    local_callables: dict[str, str] = dataclasses.field(default_factory=dict)  # name -> description
    # name -> the value (or a parameter's annotation) it was last bound to; None: unknown
    bindings: dict[str, cst.BaseExpression | None] = dataclasses.field(default_factory=dict)
    is_function: bool = False


class FileContext:
    """Resolves names and tracks the enclosing scopes and classes during one traversal."""

    # The node types :meth:`enter` and :meth:`leave` act on: the traversal calls them
    # for these only.
    ENTER_TYPES = (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.Import, cst.ImportFrom, cst.Assign,
                   cst.AnnAssign, cst.WithItem, cst.Param)
    LEAVE_TYPES = (cst.FunctionDef, cst.Lambda, cst.ClassDef)
    # The whole file's text and path, where the engine knows them (the module may hold
    # only the part the prefilter kept): file-wide facts are read from them.
    source: str | None = None
    path: str = ""
    tree: ast.Module | None = None  # the whole file's ast, where the prefilter parsed it

    @property
    def module_stem(self) -> str:
        """The file's name without folders and extension ("image_processing_vit")."""
        name = self.path.replace("\\", "/").rsplit("/", 1)[-1]
        return name[:-3] if name.endswith(".py") else name

    def __init__(self, module: cst.Module, extra_module_bases: Iterable[str] = (),
                 view: FileView | None = None) -> None:
        self.module = module
        # The project model as this file sees it: names imported from other files.
        self.view = view
        # Where a class's kind came from, when another file says it (see kinds_of).
        self.kind_steps: dict[str, tuple[Step, ...]] = {}
        self.scopes: list[Scope] = [Scope(module, "<module>")]
        self.classes: list[ClassInfo] = []
        self.known_classes: dict[str, ClassInfo] = {}
        self.functions: dict[str, cst.FunctionDef] = {}  # last definition of each name
        self.torch_module_bases = TORCH_MODULE_BASES | frozenset(extra_module_bases)
        # Module-level imports are collected up front: a function may use a name that is
        # imported further down the file.
        self._absolute: Callable[[str | None, int], str | None] = view.absolute if view else (lambda m, level: None)
        self._collect_imports(module.body, self.scopes[0].aliases)

    # -- traversal hooks -------------------------------------------------------------

    def enter(self, node: cst.CSTNode) -> None:
        if isinstance(node, (cst.FunctionDef, cst.Lambda)):
            name = node.name.value if isinstance(node, cst.FunctionDef) else "<lambda>"
            if isinstance(node, cst.FunctionDef):
                self._bind_local_callable(name, "a local function")
                self.functions[name] = node
            self.scopes.append(Scope(node, name, is_function=True))
        elif isinstance(node, cst.ClassDef):
            self._enter_class(node)
        elif isinstance(node, (cst.Import, cst.ImportFrom)) and self.in_function:
            self._collect_imports([node], self.scopes[-1].aliases)
        elif isinstance(node, cst.Assign) and len(node.targets) == 1:
            target = node.targets[0].target
            if isinstance(target, cst.Name):
                self.scopes[-1].bindings[target.value] = node.value
                kind = self.local_callable_kind(node.value)
                # A lambda has no importable name even at module level.
                if kind and (self.in_function or "lambda" in kind):
                    self.scopes[-1].local_callables[target.value] = kind
                else:
                    self.scopes[-1].local_callables.pop(target.value, None)
        elif isinstance(node, cst.AnnAssign) and isinstance(node.target, cst.Name) and node.value:
            self.scopes[-1].bindings[node.target.value] = node.value
        elif isinstance(node, cst.WithItem) and node.asname is not None:
            if isinstance(node.asname.name, cst.Name):
                self.scopes[-1].bindings[node.asname.name.value] = node.item
        elif isinstance(node, cst.Param):
            # A parameter shadows whatever the name meant outside the function.
            scope = self.scopes[-1]
            scope.bindings[node.name.value] = node.annotation.annotation if node.annotation else None
            scope.local_callables.pop(node.name.value, None)

    def leave(self, node: cst.CSTNode) -> None:
        if isinstance(node, (cst.FunctionDef, cst.Lambda)):
            self.scopes.pop()
        elif isinstance(node, cst.ClassDef):
            self.classes.pop()

    # -- scopes ----------------------------------------------------------------------

    @property
    def in_function(self) -> bool:
        return len(self.scopes) > 1

    @property
    def function(self) -> Scope | None:
        """The innermost enclosing function (not lambda), if any."""
        for scope in reversed(self.scopes):
            if isinstance(scope.node, cst.FunctionDef):
                return scope
        return None

    @property
    def current_class(self) -> ClassInfo | None:
        return self.classes[-1] if self.classes else None

    def method_class(self) -> ClassInfo | None:
        """The class whose method body we are in (directly), if any."""
        if not self.classes:
            return None
        # A method sits exactly one function deeper than the class that holds it.
        depth = sum(isinstance(s.node, cst.FunctionDef) for s in self.scopes)
        return self.classes[-1] if depth == self.classes[-1].fn_depth + 1 else None

    def lookup_binding(self, name: str) -> cst.BaseExpression | None:
        for scope in reversed(self.scopes):
            if name in scope.bindings:
                return scope.bindings[name]
        return None

    def release(self) -> None:
        """Drop everything the file's analyses attached, once the rules are done. The
        shared facts (roles, flows, layers) point back at this context, so each forms a
        cycle that would hold the file's trees until the cycle collector runs; cut here,
        they are freed at once (see :mod:`dtype_lint.project.file_lint`'s collections)."""
        vars(self).clear()

    def file_tree(self) -> ast.Module:
        """The whole file's ``ast``, parsed at most once: the prefilter's where it has one.
        File-wide facts (layers, roles) read it, whatever part of the file LibCST got."""
        if self.tree is None:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # CPython's SyntaxWarnings are not ours to print
                    self.tree = ast.parse(self.source or self.module.code)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                self.tree = ast.Module(body=[], type_ignores=[])
        return self.tree

    def file_index(self) -> Index:
        """The whole file's ``ast`` nodes by type, indexed once."""
        return self.fact("file index", lambda: Index(self.file_tree().body))

    def fact(self, key: object, make: Callable[[], object]) -> Any:
        """A fact about the whole file that the rules share (the concepts' per-file
        analyses), made on first use and dropped with the file (:meth:`release`)."""
        facts = self.__dict__.setdefault("_facts", {})
        if key not in facts:
            facts[key] = make()
        return facts[key]

    @property
    def text(self) -> str:
        """The whole file's text (the prefilter may have handed LibCST only part of it)."""
        return self.source or self.module.code

    # -- names -----------------------------------------------------------------------

    def resolve(self, node: cst.BaseExpression) -> str | None:
        """The dotted name of a Name/Attribute chain with its head import resolved.

        An unimported head stays as written, so ``torch.float32`` in a snippet without
        imports still resolves to ``torch.float32``.
        """
        parts: list[str] = []
        while isinstance(node, cst.Attribute):
            parts.append(node.attr.value)
            node = node.value
        if not isinstance(node, cst.Name):
            return None
        head = node.value
        for scope in reversed(self.scopes):
            if head in scope.aliases:
                head = scope.aliases[head]
                break
        parts.append(head)
        return ".".join(reversed(parts))

    def local_callable_kind(self, node: cst.BaseExpression) -> str | None:
        """A description ("a lambda", "a local function", ...) when ``node`` cannot be
        pickled by reference: a lambda, a function or class defined in a function, or a
        ``functools.partial`` of one of those."""
        if isinstance(node, cst.Lambda):
            return "a lambda"
        if isinstance(node, cst.Name):
            for scope in reversed(self.scopes):
                if node.value in scope.local_callables:
                    return scope.local_callables[node.value]
                if node.value in scope.bindings or node.value in scope.aliases:
                    return None
            return None
        if isinstance(node, cst.Call) and node.args:
            if self.resolve(node.func) in ("functools.partial", "partial"):
                inner = self.local_callable_kind(node.args[0].value)
                return f"a functools.partial of {inner}" if inner else None
        return None

    def _bind_local_callable(self, name: str, kind: str) -> None:
        scope = self.scopes[-1]
        if self.in_function:
            scope.local_callables[name] = kind
        else:
            scope.local_callables.pop(name, None)

    # -- classes ---------------------------------------------------------------------

    def _enter_class(self, node: cst.ClassDef) -> None:
        bases = tuple(b for b in (self.resolve(a.value) for a in node.bases) if b)
        kinds: set[str] = set()
        for base in bases:
            kinds |= self.kinds_of(base)
        depth = sum(isinstance(s.node, cst.FunctionDef) for s in self.scopes)
        info = ClassInfo(node.name.value, bases, frozenset(kinds), self.in_function, depth)
        self.known_classes[info.name] = info
        self._bind_local_callable(info.name, "a local class")
        self.classes.append(info)

    def kinds_of(self, qualified: str) -> set[str]:
        """Which of torch module / flax module / dataset a base or constructor names: a
        class of this file by its bases, a framework's class by name, else a class of
        another file by its bases there (the project model; the steps that show it are
        kept in :attr:`kind_steps`)."""
        if qualified in self.known_classes:
            return set(self.known_classes[qualified].kinds)
        later = self._later_classes.get(qualified)
        if later is not None:
            # A class defined further down the file (a factory above its module class):
            # its bases, resolved through the file's imports; a cycle of bases ends empty.
            self._later_classes[qualified] = ()
            kinds = set().union(*(self.kinds_of(base) for base in later))
            self._later_classes[qualified] = later
            return kinds
        kinds = self._framework_kinds(qualified)
        if kinds or self.view is None:
            return kinds
        # A name not bound here may come from a star import.
        for candidate in [qualified] if "." in qualified else self.view.starred(
                qualified, self.source or self.module.code, self.file_tree()):
            if class_like(candidate):
                found, steps = self.view.class_kinds(candidate, self._framework_kinds)
                if found:
                    self.kind_steps[qualified] = steps
                    return set(found)
        return set()

    @functools.cached_property
    def _later_classes(self) -> dict[str, tuple[str, ...]]:
        """The file's top-level classes, by name, to their bases' dotted names (the module's
        imports resolved): what :meth:`kinds_of` asks before a class's own line is read."""
        aliases = self.scopes[0].aliases

        def dotted(node: ast.expr) -> str | None:
            if isinstance(node, ast.Attribute):
                head = dotted(node.value)
                return f"{head}.{node.attr}" if head else None
            return aliases.get(node.id, node.id) if isinstance(node, ast.Name) else None

        return {node.name: tuple(b for b in map(dotted, node.bases) if b)
                for node in self.file_tree().body if isinstance(node, ast.ClassDef)}

    @functools.cached_property
    def _framework_kinds(self) -> Callable[[str], set[str]]:
        return functools.partial(framework_kinds, torch_bases=self.torch_module_bases)

    def class_steps(self, name: str) -> tuple[Step, ...]:
        """The steps that make a class of this file (or another) what it is, where its
        kind came from another file: through its bases here, then theirs there."""
        info = self.known_classes.get(name)
        for base in info.bases if info else (name,):
            if base in self.kind_steps:
                return self.kind_steps[base]
        return ()

    # -- imports ---------------------------------------------------------------------

    def _collect_imports(self, body: Iterable[cst.CSTNode], into: dict[str, str]) -> None:
        for stmt in body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    _add_import(small, into, self._absolute)
            elif isinstance(stmt, (cst.Import, cst.ImportFrom)):
                _add_import(stmt, into, self._absolute)
            elif isinstance(stmt, (cst.If, cst.Try, cst.With)) or type(stmt).__name__ == "TryStar":
                self._collect_imports(_nested_bodies(stmt), into)


def _nested_bodies(stmt: cst.CSTNode) -> list[cst.CSTNode]:
    """The statements directly inside an if/try/with block at module level."""
    out: list[cst.CSTNode] = []
    stack = [stmt]
    while stack:
        node = stack.pop()
        body = getattr(node, "body", None)
        if isinstance(body, cst.IndentedBlock):
            out.extend(body.body)
        for attr in ("orelse", "finalbody"):
            child = getattr(node, attr, None)
            if child is not None:
                stack.append(child)
        for handler in getattr(node, "handlers", ()):
            stack.append(handler)
        if isinstance(node, cst.Else):
            out.extend(node.body.body if isinstance(node.body, cst.IndentedBlock) else [])
    return out


def _add_import(node: cst.CSTNode, into: dict[str, str], absolute: Callable[[str | None, int], str | None]) -> None:
    if isinstance(node, cst.Import):
        for alias in node.names:
            full = _dotted(alias.name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                into[alias.asname.name.value] = full
            else:
                head = full.split(".")[0]
                into[head] = head
    elif isinstance(node, cst.ImportFrom):
        written = _dotted(node.module) if node.module is not None else None
        # A relative import is resolved where the file's module name is known.
        base = absolute(written, len(node.relative)) if node.relative else written
        if base is None or isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = _dotted(alias.name)
            local = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            into[local] = f"{base}.{name}"


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""
