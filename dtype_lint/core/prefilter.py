"""Choose the parts of a file that can hold a finding, so LibCST parses only those.

Parsing with LibCST and walking the tree costs about two parses per file, and whole-file
text tests (``float``, ``def ``, ``lambda``...) match nearly every file. This module uses
CPython's ``ast`` (written in C, several times faster than LibCST) to cut a file into
*units* (top-level statements, and the members of top-level classes; a function is
always kept whole, because rules keep state across a function's statements) and keeps

* **targets**: units that some selected rule's :class:`~dtype_lint.core.shapes.Prefilter`
  keeps (its text test, then its shape on the unit's ``ast``; only the rules whose test
  passes on the whole file's text are asked, and a file none passes is not cut at all),
  or that mention a name the rules follow: an import alias of one of their words, or a
  name bound outside functions to a value holding one (a hazard whose dtype or sink is
  only reachable through an alias); such a unit is tested again, by every rule, with
  the alias written out;
* **context**: units that bind a name some kept unit mentions (imports, module-level
  and class-body assignments, functions and classes by name, at any depth), because
  :class:`~dtype_lint.core.context.FileContext` looks names up by name; transitively;
* the header of every class one of whose members is kept (a ``pass`` stands in for an
  empty body).

The kept units are copied verbatim, line for line, so columns are unchanged and a line
map turns the reduced file's lines back into the original's. Whenever the file cannot be
cut safely (``ast`` rejects it, ``\\r`` line ends, a selected rule that declares no
prefilter) the whole file is parsed instead.

This module names no rule: each rule declares what it needs in its own file.
``tests/test_speed_features.py`` checks that findings are identical with and without the
prefilter on the fixtures and every rule example, and ``benchmarks/speed.py`` checks it
over the whole benchmark corpus.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import itertools
import re
import symtable
import warnings
from typing import TYPE_CHECKING, Callable, Iterable, Iterator

from dtype_lint.core import shapes
from dtype_lint.core.model.questions import ProjectQuestions
from dtype_lint.core.shapes import Prefilter
from dtype_lint.core.units import Unit, binds, body_on_own_lines, docstring, header_start, named, outside_functions, units
from dtype_lint.frameworks.bases import TORCH_MODULE_BASES

if TYPE_CHECKING:
    from dtype_lint.core.model.project import FileView
    from dtype_lint.core.rule import Rule
    from dtype_lint.core.options import Options


@functools.lru_cache(maxsize=32)
def prefilters(rules: tuple[type[Rule], ...], options: Options) -> dict[str, Prefilter] | None:
    """Each rule's prefilter by code; None when some rule declares none (then whole files
    are parsed)."""
    out: dict[str, Prefilter] = {}
    for rule in rules:
        declared = rule.prefilter(options)
        if declared is None:
            return None
        out[rule.doc.code] = declared
    return out


@dataclasses.dataclass(frozen=True)
class Followed:
    """What the selected rules follow, from their prefilters together (see Prefilter)."""

    imports: re.Pattern[str]  # words of qualified names whose renamed imports are written out
    configured: re.Pattern[str]  # configured names whose imports are written out, renamed or not
    values: re.Pattern[str]  # words of values whose names, bound outside functions, are followed
    bodies: re.Pattern[str]  # what makes a function kept as context keep its body


@functools.lru_cache(maxsize=32)
def _followed(rules: tuple[Prefilter, ...]) -> Followed:
    def union(words: Iterable[str]) -> re.Pattern[str]:
        return shapes.words(sorted(set(words)))

    return Followed(
        union(w for r in rules for w in r.import_words),
        union(w for r in rules for w in r.configured),
        re.compile(f"{union(w for r in rules for w in r.value_words).pattern}|"
                   f"{shapes.words(sorted({w for r in rules for w in r.value_names}), whole=True).pattern}"),
        re.compile("|".join(r.body_words.pattern for r in rules if r.body_words is not None) or r"(?!)"),
    )


@dataclasses.dataclass(frozen=True)
class Reduced:
    """The kept lines as one text, and the original line of each of its lines."""

    text: str
    lines: tuple[int, ...]  # lines[i] is the original line of reduced line i + 1 (0: synthetic)
    codes: frozenset[str] = frozenset()  # the rules that can find something in it
    tree: ast.Module | None = None  # the whole file's ast, for the rules' file-wide facts


def reduce_source(text: str, rules: Iterable[type[Rule]], options: Options,
                  tree: ast.Module | None = None, within: frozenset[int] | None = None,
                  view: FileView | None = None) -> Reduced | None:
    """The part of ``text`` to parse; ``Reduced("", ())`` when nothing can be found,
    None when the whole file must be parsed. ``tree``: the text's ``ast``, if the caller
    has it already (flake8 parses every file). ``within``: the first lines of the
    top-level units that may be targets (the others are kept only as context), for a
    lint of part of the file (:mod:`dtype_lint.core.incremental`)."""
    declared = prefilters(tuple(rules), options)
    if declared is None or "\r" in text:
        return None
    # The rules whose whole-file test passes: only they test the units themselves. A test
    # counts on a local callable (its `local`) only where the file holds one.
    active = {code: p for code, p in declared.items() if p.keeps(text, False, None)}
    local = {code: p for code, p in declared.items() if code not in active and p.keeps(text, True, None)}
    if local and (tree is not None or _holds_local(text)):
        active = {code: p for code, p in declared.items() if code in active or code in local}
    if not active:
        # Nothing to find, but a file that does not parse is reported whether or not the
        # prefilter is on.
        if tree is None and not compiles(text):
            return None
        return Reduced("", ())
    if tree is None:
        tree = _checked(ast.parse, text)
        if tree is None:
            return None
    planner = _Planner(tree, text, declared, active, options, within, view)
    try:
        return planner.reduce()
    finally:
        planner.release()


def compiles(text: str) -> bool:
    """Whether CPython accepts the text. Building the symbol table checks that without
    making Python objects of the tree (half the time of ast.parse)."""
    return _symbols(text) is not None


@functools.lru_cache(maxsize=1)
def _symbols(text: str) -> symtable.SymbolTable | None:
    """The text's symbol table, None where CPython rejects it; the last one is kept, for
    _holds_local and then compiles ask about the same file."""
    return _checked(symtable.symtable, text, "<file>", "exec")


# What a file must spell to hold a local callable or a generator other than a generator
# expression or a nested definition (whose scopes the symbol table shows): a lambda, a
# partial, a generator function, a parameter named or annotated as a generator.
_LOCAL_WORDS = ("lambda", "partial", "yield", "gen", "Gen", "Iterator")
_COMPREHENSIONS = frozenset({"listcomp", "setcomp", "dictcomp", "genexpr"})


def _holds_local(text: str) -> bool:
    """Whether the file may hold a local callable or a generator (what a whole-file test's
    ``local`` stands for, see Prefilter): one of _LOCAL_WORDS, or by CPython's symbol
    table a generator expression or a function or class defined inside a function. True
    where CPython rejects the text (the caller's ast.parse then gives way to LibCST)."""
    if any(word in text for word in _LOCAL_WORDS):
        return True
    table = _symbols(text)
    if table is None:
        return True
    stack = [(table, False)]
    while stack:
        scope, in_function = stack.pop()
        for child in scope.get_children():
            kind = child.get_type()
            # A comprehension's scope takes its iterable as the parameter `.0`, which no
            # def can name.
            comprehension = child.get_name() in _COMPREHENSIONS and ".0" in child.get_parameters()
            if (child.get_name() == "genexpr" if comprehension else in_function and kind in ("function", "class")):
                return True
            stack.append((child, in_function or kind not in ("class", "module")))
    return False


def _checked(parse: Callable, *args):
    """``parse(*args)``, or None where CPython rejects the text: LibCST then parses the
    whole file and reports the error in its own words (or accepts what only CPython's
    later passes reject)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # CPython's SyntaxWarnings are not ours to print
            return parse(*args)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


# Names after `def`/`class`, searched from the keyword (a literal start is found far
# faster than `\b` or an alternation); units.named checks that the keyword starts a word.
_DEF_NAME = re.compile(r"def\s+([A-Za-z_]\w*)")
_CLASS_NAME = re.compile(r"class\s+([A-Za-z_]\w*)")
_NESTED_DEF = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]", re.MULTILINE)
# A bare name that means a dtype once imported from a framework (`from torch import float`).
_BARE_DTYPES = frozenset({"float", "single", "half", "double"})


class _Planner:
    def __init__(self, tree: ast.Module, text: str, declared: dict[str, Prefilter], active: dict[str, Prefilter],
                 options: Options, within: frozenset[int] | None = None, view: FileView | None = None) -> None:
        self.text = text
        self.view = view
        self.within = within
        self.tree = tree
        self.lines = lines = text.split("\n")
        self.options = options
        self.declared = declared
        self.active = active  # the rules whose whole-file test passes (see reduce_source)
        self.followed = _followed(tuple(declared.values()))
        self.codes: set[str] = set()
        self.units = units(tree.body)
        # The leaves: each unit, or for a top-level class with a body of its own, each
        # member (cut the same way); key (unit index, member index or -1).
        self.leaves: list[tuple[tuple[int, int], Unit]] = []
        self.members: dict[int, list[Unit]] = {}
        for index, unit in enumerate(self.units):
            node = unit.node
            if isinstance(node, ast.ClassDef) and body_on_own_lines(node, lines):
                self.members[index] = units(node.body)
                self.leaves.extend(((index, i), m) for i, m in enumerate(self.members[index]))
            else:
                self.leaves.append(((index, -1), unit))
        self.texts = ["\n".join(lines[leaf.start - 1:leaf.end]) for _, leaf in self.leaves]
        # Statements (and classes) outside functions: where imports and bindings hold for
        # the whole file. The split classes' members are leaves of their own.
        self.outer = [node for _, leaf in self.leaves if not leaf.is_function
                      for node in outside_functions(leaf.nodes)]
        self._binds: dict[int, set[str]] = {}
        self._mentions: dict[int, set[str]] = {}
        self._syntax: dict[int, shapes.Syntax] = {}
        self._names: shapes.Names | None = None
        self._functions: dict[str, list[int]] | None = None
        self.memo: dict = {}  # the rules' per-file answers (shapes.Syntax.file_memo)
        self.aliased: set[int] = set()  # leaves that mention a tainted name
        self.stubs: dict[tuple[int, int], int] = {}  # kept functions whose body gives way to `pass`
        # A textual test is enough here (a tainted name in a string only keeps more).
        self.imported: dict[str, str] = {}  # tainted import aliases -> the qualified name
        self._aliases: re.Pattern[str] | None = None
        self.tainted = self._taint()
        self.tainted_words = shapes.words(sorted(self.tainted), whole=True) if self.tainted else None

    def release(self) -> None:
        """Drop the units' syntax and the file's names. They hold the planner's bound
        methods, so with the planner they form cycles that hold the file's ``ast`` until
        the cycle collector runs; cut here, the tree is freed as soon as the reduction
        is made (see :mod:`dtype_lint.project.file_lint`'s collections)."""
        self._syntax.clear()
        self._names = None
        self.memo.clear()

    def binds(self, position: int) -> set[str]:
        """The names a leaf binds where FileContext looks them up (see _binds)."""
        if position not in self._binds:
            leaf = self.leaves[position][1]
            if leaf.is_function:
                text = self.texts[position]
                self._binds[position] = named(text, _DEF_NAME) | named(text, _CLASS_NAME)
            else:
                self._binds[position] = binds(leaf)
        return self._binds[position]

    def mentions(self, position: int) -> set[str]:
        """The names a leaf reads or binds (not attribute names): what it may look up."""
        if position not in self._mentions:
            self._mentions[position] = {n.id for n in self.syntax(position).index(ast.Name)}
        return self._mentions[position]

    def syntax(self, position: int) -> shapes.Syntax:
        if position not in self._syntax:
            (index, member), leaf = self.leaves[position]
            owner = self.units[index].node if member >= 0 else None
            self._syntax[position] = shapes.Syntax(leaf.nodes, self.lines, self.function_text,
                                                   lambda: self.functions().keys(), self.names, self.text, self.tree,
                                                   self.memo, owner=owner,
                                                   function_texts=self.function_texts)  # type: ignore[arg-type]
        return self._syntax[position]

    def names(self) -> shapes.Names:
        """Imports and bindings outside functions, and every class name: what a rule's
        shape resolves names through (whether a receiver may be a module, say)."""
        if self._names is None:
            aliases: dict[str, set[str]] = {}
            bindings: dict[str, list[ast.AST]] = {}
            absolute = self.view.absolute if self.view else (lambda module, level: None)
            shapes.collect(self.outer, aliases, bindings, absolute)
            classes = frozenset(named(self.text, _CLASS_NAME))
            bases = TORCH_MODULE_BASES | frozenset(self.options.module_bases)
            questions = ProjectQuestions(self.view, self.text, self.tree, self.options, lambda: self.names().classes)
            self._names = shapes.Names(aliases, classes, bindings, bases, tuple(self.options.module_names),
                                       self.text, questions.project_kinds, absolute, questions.casting_function,
                                       questions.constructor_keeps, questions.returns_local,
                                       questions.file_class_kinds)
        return self._names

    def functions(self) -> dict[str, list[int]]:
        """The leaves that are functions, by each name they define (at any depth)."""
        if self._functions is None:
            self._functions = {}
            for position, (_, leaf) in enumerate(self.leaves):
                if leaf.is_function:
                    for name in self.binds(position):
                        self._functions.setdefault(name, []).append(position)
        return self._functions

    def function_text(self, name: str) -> str:
        """The text of every leaf defining a function (at any depth) called ``name``."""
        return "\n".join(self.function_texts(name))

    def function_texts(self, name: str) -> list[str]:
        """The text of each leaf defining a function (at any depth) called ``name``."""
        return [self.texts[position] for position in self.functions().get(name, ())]

    def reduce(self) -> Reduced:
        keep: set[tuple[int, int]] = set()
        headers: set[int] = set()
        needed: set[str] = set()
        for position, (key, leaf) in enumerate(self.leaves):
            if self.within is not None and self.units[key[0]].start not in self.within:
                continue
            matched = self.matches(position, leaf)
            self.codes |= matched
            if matched:
                body = self._header_suffices(position, leaf, matched)
                if body is not None:
                    self.stubs[key] = body
                self._keep(position, key, keep, headers, needed, header_only=body is not None)
        # Context: every leaf binding a needed name, until no new name is needed.
        done: set[str] = set()
        while needed - done:
            names = needed - done
            done |= names
            for position, (key, leaf) in enumerate(self.leaves):
                if key not in keep and self.binds(position) & names:
                    body = self._stub_body(position, leaf)
                    if body is None:
                        self._keep(position, key, keep, headers, needed)
                    else:
                        self.stubs[key] = body
                        self._keep(position, key, keep, headers, needed, header_only=True)
            for index in self.members:
                if index not in headers and self.units[index].node.name in names:  # type: ignore[union-attr]
                    self._header(index, headers, needed)
        return self._assemble(keep, headers)

    def _header_suffices(self, position: int, leaf: Unit, matched: set[str]) -> int | None:
        """For a function kept for one rule alone, the line its body starts on if that
        rule says only the function's header can hold its finding here (its prefilter's
        ``header_only``): the body then gives way to ``pass`` (as for context, below). Not
        where the unit mentions an alias: the rule's check sees only the alias."""
        if len(matched) != 1 or position in self.aliased:
            return None
        header_only = self.declared[next(iter(matched))].header_only
        if header_only is None:
            return None
        body = self._stub_body(position, leaf)
        if body is None:
            return None
        return body if header_only(shapes.Index(leaf.node.body), self.lines) else None  # type: ignore[union-attr]

    def _stub_body(self, position: int, leaf: Unit) -> int | None:
        """For a function kept only because it is named, the line its body starts on, if
        the body can give way to ``pass``: FileContext needs the name, decorators and
        parameters, and a body only where a rule reads it through the name (its
        prefilter's ``body_words``) or it defines functions or classes (bound by name at
        any depth)."""
        node = leaf.node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or not body_on_own_lines(node, self.lines):
            return None
        start = header_start(node.body[0])
        body = "\n".join(self.lines[start - 1:leaf.end])
        if self.followed.bodies.search(body) or (("def" in body or "class" in body) and _NESTED_DEF.search(body)):
            return None
        return start

    def _keep(self, position: int, key: tuple[int, int], keep: set, headers: set[int], needed: set[str],
              header_only: bool = False) -> None:
        keep.add(key)
        if header_only:
            node = self.leaves[position][1].node
            parts = [*node.decorator_list, node.args, node.returns]  # type: ignore[union-attr]
            needed |= {n.id for part in parts if part is not None for n in shapes.walk(part) if isinstance(n, ast.Name)}
        else:
            needed |= self.mentions(position)
        index, member = key
        if member >= 0 and index not in headers:
            self._header(index, headers, needed)

    def _header(self, index: int, headers: set[int], needed: set[str]) -> None:
        """Keep the header of a split class (its bases decide what kind of class it is)."""
        headers.add(index)
        node = self.units[index].node
        assert isinstance(node, ast.ClassDef)
        parts: list[ast.AST] = [*node.bases, *node.keywords, *node.decorator_list]
        needed |= {n.id for part in parts for n in shapes.walk(part) if isinstance(n, ast.Name)}

    def matches(self, position: int, unit: Unit) -> set[str]:
        """The rules that may find something in the unit."""
        text = self.texts[position]
        node = unit.node
        body_line = unit.start
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body_line = node.body[0].lineno
            if docstring(node, self.lines):
                # A docstring full of dtype words is not code; skip its lines when matching.
                doc = node.body[0]
                body_line = doc.end_lineno + 1
                text = "\n".join(self.lines[unit.start - 1:doc.lineno - 1] + self.lines[doc.end_lineno:unit.end])
        body = "\n".join(self.lines[body_line - 1:unit.end]) if unit.is_function else text
        local = "lambda" in text or "partial" in text or (
            unit.is_function and ("def " in body or "class " in body) and bool(_NESTED_DEF.search(body)))
        syntax = self.syntax(position)
        matched = {code for code, declared in self.active.items() if declared.keeps(text, local, syntax)}
        # Each name the regex finds is a substring: `in` rules most units out far faster.
        mentioned = set(self.tainted_words.findall(self.texts[position])) if self.tainted_words and any(
            name in self.texts[position] for name in self.tainted) else set()
        # Imports inside the unit (a function's own) are not among the file's tainted
        # names; a plain import statement's names are.
        inner = {} if "import" not in text or isinstance(node, (ast.Import, ast.ImportFrom)) else dict(
            pair for n in syntax.index(ast.Import, ast.ImportFrom) for pair in _tainted_imports(n, self.followed))
        if mentioned or inner:
            self.aliased.add(position)
            # Reached through an alias: test the text with what each alias stands for, and
            # without the shape checks, which see only the alias.
            expansions = "\n".join(self.tainted[name] for name in sorted(mentioned) if name not in self.imported)
            local = local or "lambda" in expansions or "partial" in expansions
            spelled = self._spell(text)
            if inner:
                spelled = shapes.words(sorted(inner), whole=True).sub(lambda m: inner[m.group()], spelled)
            expanded = f"{spelled}\n{expansions}"
            matched |= {code for code, declared in self.declared.items()
                        if declared.keeps(expanded, local, syntax if declared.sees_aliases else None)}
        return matched

    def _spell(self, text: str) -> str:
        """The text with each import alias written out (`jt.map` -> `jax.tree.map`)."""
        if not self.imported:
            return text
        if self._aliases is None:
            self._aliases = shapes.words(sorted(self.imported), whole=True)
        return self._aliases.sub(lambda m: self.imported[m.group()], text)

    def _taint(self) -> dict[str, str]:
        """Names through which a unit can reach a rule's test without spelling its words,
        each with the text it stands for: import aliases the rules follow (their qualified
        name), names bound outside functions to a value the rules follow (the value's
        text; for a class, its bases), and names bound from those, to a fixpoint."""
        tainted: dict[str, str] = {}
        follow: list[tuple[set[str], set[str], str]] = []  # (bound names, names in the value, its text)
        # Split classes: their header only (their members are leaves of their own).
        headers = [self.units[index].node for index in self.members]
        for node in itertools.chain(headers, self.outer):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for local, qualified in _tainted_imports(node, self.followed):
                    tainted[local] = qualified
                    self.imported[local] = qualified
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                bound = {n.id for t in targets for n in shapes.walk(t) if isinstance(n, ast.Name)}
                text = "\n".join(self.lines[node.lineno - 1:node.end_lineno])
                if self.followed.values.search(text):
                    tainted.update(dict.fromkeys(bound, text))
                follow.append((bound, {n.id for n in shapes.walk(node.value) if isinstance(n, ast.Name)}, text))
            elif isinstance(node, ast.ClassDef):
                header = {n.id for part in node.bases for n in shapes.walk(part) if isinstance(n, ast.Name)}
                text = " ".join(shapes.lines_of(b, self.lines) for b in node.bases)
                if self.followed.values.search(text):
                    tainted[node.name] = text
                follow.append(({node.name}, header, text))
        changed = bool(tainted)
        while changed:
            changed = False
            for bound, mentions, text in follow:
                sources = mentions & tainted.keys()
                if sources and not bound <= tainted.keys():
                    expansion = "\n".join([self._spell(text), *(tainted[name] for name in sorted(sources))])
                    tainted.update((name, expansion) for name in bound if name not in tainted)
                    changed = True
        return tainted

    def _assemble(self, keep: set[tuple[int, int]], headers: set[int]) -> Reduced:
        out: list[str] = []
        origin: list[int] = []

        def copy(start: int, end: int) -> None:
            out.extend(self.lines[start - 1:end])
            origin.extend(range(start, end + 1))

        def stub(first: int) -> None:
            body = self.lines[first - 1]
            out.append(body[: len(body) - len(body.lstrip())] + "pass")
            origin.append(0)

        def copy_leaf(key: tuple[int, int], leaf: Unit) -> None:
            if key in self.stubs:
                copy(leaf.start, self.stubs[key] - 1)
                stub(self.stubs[key])
            else:
                copy(leaf.start, leaf.end)

        for index, unit in enumerate(self.units):
            if index in headers:
                first = self.members[index][0].start
                copy(unit.start, first - 1)
                kept = [(i, m) for i, m in enumerate(self.members[index]) if (index, i) in keep]
                for i, member in kept:
                    copy_leaf((index, i), member)
                if not kept:
                    stub(first)
            elif (index, -1) in keep:
                copy_leaf((index, -1), unit)
        if not out:
            return Reduced("", (), tree=self.tree)
        return Reduced("\n".join(out) + "\n", tuple(origin), frozenset(self.codes), self.tree)


def _tainted_imports(node: ast.Import | ast.ImportFrom, followed: Followed) -> Iterator[tuple[str, str]]:
    """(local name, qualified name) for each name of the import worth following: renamed
    (or a bare dtype such as `from torch import float`) and holding a word the rules
    follow, or holding a configured name (a sink, stage or cast helper)."""
    module = getattr(node, "module", None) or ""
    for alias in node.names:
        qualified = f"{module}.{alias.name}" if module else alias.name
        local = alias.asname or alias.name.split(".")[0]
        renamed = local != qualified.rsplit(".", 1)[-1] or local in _BARE_DTYPES
        if (renamed and followed.imports.search(qualified)) or followed.configured.search(qualified):
            yield local, qualified
