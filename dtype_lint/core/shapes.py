"""What rules tell the prefilter, and the helpers they write it with.

A rule declares, in its own file, a :class:`Prefilter`: what a *unit* (a top-level
statement, or a member of a top-level class) must hold for the rule to have anything to
find there. Its test gets the unit's text, whether the unit may hold a local callable
(a lambda, a ``partial``, a nested function or class), and the unit's :class:`Syntax`
(CPython's ``ast`` of it), which is None when only a whole file's text is tested. The
cheap text test comes first; the *shape* (the syntax the rule reports, on the ``ast``)
only where the text passes.

Every test must over-approximate its rule: a dtype counts when the source lines of the
expression pass the same text test as the rule, so anything a rule resolves (an import
alias is made visible by the prefilter's followed names) is still kept. The helpers
here (the float32 text test, the node index, a file's names, whether an expression may
be a module) are shared by the rules; none of this imports LibCST.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import re
from collections.abc import Mapping
from typing import Callable, Collection, Iterable, Sequence

TextTest = Callable[[str], bool]

_FLOAT_ATTR = re.compile(r"float\b(?!\s*\()")  # torch.float, not a float(...) call
_SINGLE = re.compile(r"single\b")
# `from torch import float`: the bare name then means float32 wherever it is used.
_BARE_IMPORT = re.compile(r"\bimport\s+(?:\([^)]*|[^\n;]*)\b(?:float|single)\b")
_DTYPE_WORDS = ("dtype", "float", "half", "double", "bfloat16", "single", "getattr")
_CAST_METHOD = re.compile(r"\.\s*(?:half|bfloat16|double|float)\s*\(")
_TYPE_CAST = re.compile(r"\.\s*(?:to|type|astype)\s*\(")


@dataclasses.dataclass(frozen=True)
class Prefilter:
    """What a rule tells the prefilter (:mod:`dtype_lint.core.prefilter`)."""

    # (unit text, may hold a local callable, the unit's syntax or None for a whole-file
    # text test) -> whether a finding of the rule may lie in the unit. For a whole file,
    # `local` is false only where the file holds no lambda, partial, nested definition
    # or generator of any kind (no source of core.flow's).
    keeps: Callable[[str, bool, "Syntax | None"], bool]
    # Whether the shape checks hold for a unit reached through an alias too (they do
    # not read how names are spelled): such a unit is then tested with its syntax and
    # the text with each alias written out, not with the text alone.
    sees_aliases: bool = False
    # Words of a qualified name: a *renamed* import of it is written out in the text the
    # test sees (`import jax.tree as jt`: `jt.map` is read as `jax.tree.map`).
    import_words: tuple[str, ...] = ()
    # Literal pieces of configured names (sinks, helpers): an import of one, renamed or
    # not, is written out likewise.
    configured: tuple[str, ...] = ()
    # Words of a value: a name bound to it outside functions (an assignment, or a class
    # whose bases hold the word) is followed, so a unit that only mentions the name is
    # tested with the value's text too.
    value_words: tuple[str, ...] = ()
    # Names of a value, followed likewise but matched as whole words (`Pool`, not the
    # `Pooling` of a model output class).
    value_names: tuple[str, ...] = ()
    # A function kept only because a kept unit names it keeps its body where the body
    # matches (the rule reads the body through the name).
    body_words: re.Pattern[str] | None = None
    # For a function kept for this rule alone: whether only its header (decorators and
    # parameters) can hold a finding, given an index of its body; the body then gives
    # way to `pass`.
    header_only: Callable[["Index", Sequence[str]], bool] | None = None


def union(prefilters: Sequence[Prefilter | None]) -> Prefilter | None:
    """One prefilter that keeps what any of ``prefilters`` keeps (a rule's, from its
    finders'); None if one of them is None (nothing can be cut then). Their shapes must
    agree on aliases (``sees_aliases``); a header-only cut holds for one alone."""
    if not prefilters or any(p is None for p in prefilters):
        return None
    if len(prefilters) == 1:
        return prefilters[0]
    parts: list[Prefilter] = list(prefilters)  # type: ignore[arg-type]
    if len({p.sees_aliases for p in parts}) != 1:
        raise ValueError("the finders of one rule must agree on sees_aliases")
    bodies = [p.body_words.pattern for p in parts if p.body_words is not None]
    return Prefilter(
        lambda t, lc, u: any(p.keeps(t, lc, u) for p in parts),
        sees_aliases=parts[0].sees_aliases,
        import_words=tuple(dict.fromkeys(w for p in parts for w in p.import_words)),
        configured=tuple(dict.fromkeys(w for p in parts for w in p.configured)),
        value_words=tuple(dict.fromkeys(w for p in parts for w in p.value_words)),
        value_names=tuple(dict.fromkeys(w for p in parts for w in p.value_names)),
        body_words=re.compile("|".join(bodies)) if bodies else None,
    )


@dataclasses.dataclass(frozen=True)
class Syntax:
    """A unit's statements, for the rules whose trigger also checks their shape."""

    nodes: tuple[ast.AST, ...]
    lines: list[str]
    function_text: Callable[[str], str]  # the text of this file's functions of that name
    function_names: Callable[[], Collection[str]]  # the names those functions define
    file_names: Callable[[], Names]  # the file's imports, classes and outer bindings
    file_text: str = ""  # the whole file (for whole-file analyses such as concepts.layer_facts)
    file_tree: ast.Module | None = None  # its ast, parsed once by the prefilter
    # Answers a rule's helpers keep for the whole file (one dict shared by its units) and
    # for this unit, so that each is worked out once per file or unit.
    file_memo: dict = dataclasses.field(default_factory=dict)
    memo: dict = dataclasses.field(default_factory=dict)
    owner: ast.ClassDef | None = None  # for a member of a top-level class: the class
    # The text of each unit that defines a function of that name (at any depth).
    function_texts: Callable[[str], Sequence[str]] = lambda name: ()

    @functools.cached_property
    def index(self) -> Index:
        return Index(self.nodes)

    @functools.cached_property
    def _names(self) -> Names:
        return self.file_names().add(self.index(ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign,
                                                ast.withitem, ast.arg))

    def names(self) -> Names:
        """What the unit can resolve a name through: the file's names and its own, built
        once, when a rule first asks."""
        return self._names



def lines_of(node: ast.AST, lines: Sequence[str]) -> str:
    """The whole source lines an expression spans (a superset of its own text)."""
    return "\n".join(lines[node.lineno - 1:node.end_lineno])  # type: ignore[attr-defined]


def text_of(node: ast.AST, lines: Sequence[str]) -> str:
    """An expression's own text when it lies on one line, else its whole lines."""
    if node.lineno != node.end_lineno:  # type: ignore[attr-defined]
        return lines_of(node, lines)
    line = lines[node.lineno - 1]  # type: ignore[attr-defined]
    start, end = node.col_offset, node.end_col_offset  # type: ignore[attr-defined]
    # ast's columns count UTF-8 bytes.
    return line[start:end] if line.isascii() else line.encode("utf-8")[start:end].decode("utf-8", "replace")


def walk(root: ast.AST, parents: dict[int, ast.AST] | None = None) -> list[ast.AST]:
    """``root`` and every node below it but contexts and operators (see
    :func:`child_fields`), in no set order (as ``ast.walk``, whose order nothing here
    relies on): a plain stack, about twice as fast as ``ast.walk``'s generators.
    ``parents``, if given, gets each node's parent by id."""
    out: list[ast.AST] = []
    stack = [root]
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        out.append(node)
        kind = node.__class__
        fields = _CHILD_FIELDS.get(kind)
        for name in child_fields(kind) if fields is None else fields:
            value = getattr(node, name, None)
            if value.__class__ is list:
                for child in value:
                    if isinstance(child, ast.AST):
                        push(child)
                        if parents is not None:
                            parents[id(child)] = node
            elif isinstance(value, ast.AST):
                push(value)
                if parents is not None:
                    parents[id(value)] = node
    return out


# Fields that never hold a node worth visiting: names and flags, and the singleton
# contexts and operators (``Load``, ``Add``...), which are read through their parent
# (``node.ctx``, ``node.op``) and make up a third of a tree's nodes.
_LEAF_FIELDS = frozenset({"id", "attr", "name", "arg", "kind", "type_comment", "level", "module", "is_async",
                          "conversion", "tag", "ctx", "op", "ops"})
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def child_fields(kind: type) -> tuple[str, ...]:
    """The fields of a node type that may hold the nodes :func:`walk` and
    :class:`Index` visit, worked out on the type's first node."""
    fields = _CHILD_FIELDS[kind] = tuple(f for f in kind._fields if f not in _LEAF_FIELDS)  # type: ignore[attr-defined]
    return fields


def device_like(arg: ast.AST) -> bool:
    """An argument of ``.to()`` that names a device, never a dtype: ``"cuda"``, ``device``,
    ``x.device``, ``cpu``, ``torch.device(...)``, ``x.get_device()`` (a string or a name
    that may spell a dtype is not one)."""
    if isinstance(arg, ast.Constant):
        return isinstance(arg.value, str) and not any(word in arg.value.lower() for word in _DTYPE_TEXT)
    if isinstance(arg, ast.Call):
        return "device" in (last_name(arg.func) or "").lower()
    name = (last_name(arg) or "").lower()
    return ("device" in name or name in ("cuda", "cpu")) and "dtype" not in name


# What a dtype's text may hold (names_dtype accepts `dtype` in any case, dtype_name a
# dtype's name).
_DTYPE_TEXT = ("float", "half", "double", "bf", "int", "bool", "complex", "dtype", "single")


def dotted(node: ast.AST) -> str | None:
    """The dotted name of a Name/Attribute chain (``a.b.f``) as written, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def last_name(node: ast.AST) -> str | None:
    """The last part of a dotted name (``f`` of ``a.b.f``, ``f`` of ``f``), else None."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


class Index:
    """The nodes of some statements by type, from one walk."""

    def __init__(self, nodes: Sequence[ast.AST]) -> None:
        # The walk above, inlined: an index is built for every unit the prefilter tests.
        # Contexts and operators are not indexed (see child_fields).
        by_type: dict[type, list[ast.AST]] = {}
        found = by_type.get
        stack = list(nodes)
        pop, push = stack.pop, stack.append
        while stack:
            node = pop()
            kind = node.__class__
            same = found(kind)
            if same is None:
                by_type[kind] = [node]
            else:
                same.append(node)
            fields = _CHILD_FIELDS.get(kind)
            for name in child_fields(kind) if fields is None else fields:
                value = getattr(node, name, None)
                if value.__class__ is list:
                    for child in value:
                        if isinstance(child, ast.AST):
                            push(child)
                elif isinstance(value, ast.AST):
                    push(value)
        self._by_type = by_type

    def __call__(self, *types: type) -> list:
        if len(types) == 1:
            return self._by_type.get(types[0], [])
        return [node for t in types for node in self._by_type.get(t, [])]



# Literal tests first: `in` scans far faster than a regex without a literal prefix (or
# an alternation of literals).
# The float32 rules test the same unit text in turn.
@functools.lru_cache(maxsize=16)
def f32(text: str) -> bool:
    """Whether the text may spell float32 (dtypes.dtype_name): float32, `.single`,
    "single", or torch's `.float` attribute (whitespace may follow the dot)."""
    if "float32" in text or _bare_import(text):
        return True
    return ("single" in text and _after_dot_or_quote(text, _SINGLE, "'\"")) or (
        "float" in text and _after_dot_or_quote(text, _FLOAT_ATTR, ""))


def in_word(text: str, i: int) -> bool:
    """Whether ``text[i]`` is a character of a word (as ``\\w``): a regex that would start
    with ``\\b`` starts with its literal instead, searched far faster, and checks this
    before each match."""
    return 0 <= i < len(text) and (text[i].isalnum() or text[i] == "_")


_BLANK = " \t\n\r\f\\"  # what may lie between two tokens of a call, but comments
# What may follow a called name up to its call's parenthesis: blanks, comments and the
# closing parentheses of a parenthesized callee (`(self.name)(x)`), not `f(a, name)`.
_THEN_CALLED = re.compile(r"(?:[\s\\)]|#[^\n]*\n)*\(")


def may_call(text: str, name: str, called: bool = False) -> bool:
    """Whether ``name`` is in the text as a whole word that may be called as ``name(...)``
    or ``self.name(...)``: not after ``def``/``class``, and after a dot only where the
    receiver may be ``self`` (or a comment hides it). ``called``: only a use followed by
    a call's parenthesis counts (a function handed on as a value is not called here). A
    use in a string or a comment counts, which only errs towards a call."""
    start = text.find(name)
    while start >= 0:
        end = start + len(name)
        if not (in_word(text, start - 1) or in_word(text, end)) and (not called or _THEN_CALLED.match(text, end)):
            before = _skip_blank(text, start - 1)
            if before < 0:
                return True
            if text[before] == ".":
                receiver = _skip_blank(text, before - 1)
                while receiver >= 0 and text[receiver] == ")":  # `(self).name`
                    receiver = _skip_blank(text, receiver - 1)
                line = text[text.rfind("\n", 0, receiver + 1) + 1:receiver + 1]
                if receiver < 3 or "#" in line or (text[receiver - 3:receiver + 1] == "self"
                                                  and not in_word(text, receiver - 4)):
                    return True
            elif not any(text[before - len(word) + 1:before + 1] == word and not in_word(text, before - len(word))
                         for word in ("def", "class")):
                return True
        start = text.find(name, start + 1)
    return False


def _skip_blank(text: str, i: int) -> int:
    """The index of the last character at or before ``i`` that is not blank."""
    while i >= 0 and text[i] in _BLANK:
        i -= 1
    return i


def _bare_import(text: str) -> bool:
    """``_BARE_IMPORT.search(text)``, tried only where ``import`` is: a search would try
    every position of the text."""
    start = text.find("import")
    while start >= 0:
        if _BARE_IMPORT.match(text, start):
            return True
        start = text.find("import", start + 1)
    return False


def _after_dot_or_quote(text: str, word: re.Pattern[str], quotes: str) -> bool:
    """Whether ``word`` occurs as an attribute (after a dot and optional whitespace)
    or right after one of ``quotes``."""
    for match in word.finditer(text):
        before = match.start() - 1
        if before >= 0 and text[before] in quotes:
            return True
        while before >= 0 and text[before] in " \t\n\\":
            before -= 1
        if before >= 0 and text[before] == ".":
            return True
    return False


def cast_call(text: str) -> bool:
    """Whether the text may hold a cast: ``.half()`` and the like, or ``.to``/``.type``/
    ``.astype`` with a dtype word in the call's text."""
    if "." not in text or "(" not in text:
        return False
    if ("float" in text or "half" in text or "double" in text) and _CAST_METHOD.search(text):
        return True
    # names_dtype accepts any spelling of "dtype" in the argument, in any case.
    if not _TYPE_CAST.search(text):
        return False
    lowered = text.lower()
    return any(word in lowered for word in _DTYPE_WORDS)


def literals(patterns: Iterable[str]) -> list[str] | None:
    """The literal pieces of dotted globs (between dots and wildcards): a qualified name
    that matches a glob contains each of its pieces. None if a glob has none (or a
    character class), so a rule configured with it cannot be narrowed."""
    out = []
    for pattern in patterns:
        pieces = [p for p in re.split(r"[.*?]", pattern) if p]
        if "[" in pattern or not pieces:
            return None
        out.extend(pieces)
    return out


def words(words: list[str], whole: bool = False) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(w) for w in words) or r"(?!)"
    return re.compile(rf"\b(?:{alternatives})\b" if whole else alternatives)


@dataclasses.dataclass
class Names:
    """What a rule's shape resolves a name through, over-approximated for a whole file: every
    import (local name -> qualified names), every class name, and every binding (an
    assignment's value, a parameter's annotation) that a unit can see: its own and
    those outside functions."""

    aliases: dict[str, set[str]]
    classes: frozenset[str]
    bindings: dict[str, list[ast.AST]]
    module_bases: frozenset[str]  # qualified names that make a class a torch module
    module_names: tuple[str, ...]  # receiver names taken to be modules (`module-names`)
    text: str = ""  # the whole file's text (what the concepts read of it, once per file)
    # What the project model says a class of another file is (FileContext.kinds_of asks
    # the same), and the module a relative import names; nothing without a model.
    project_kinds: Callable[[str], frozenset[str]] = lambda qualified: frozenset()
    absolute: Callable[[str | None, int], str | None] = lambda module, level: None
    # Whether a function (of this file or another) casts the parameter an argument (a
    # position or a keyword; None: any) binds, itself or through helpers (the project model).
    casting_function: Callable[[str, int | str | None], bool] = lambda qualified, slot: False
    # Whether instances of a class (of this file or another) are pickled whole with what
    # its constructor is handed as the argument ``slot``: a dataset (kept, as far as a
    # rule can know), or a class whose ``__init__`` keeps that parameter on ``self``; a
    # class the model cannot read counts. True without a model.
    constructor_keeps: Callable[[str, int | str], bool] = lambda qualified, slot: True
    # Whether a function of another file returns a callable of its own (a factory).
    returns_local: Callable[[str], bool] = lambda qualified: False
    # The kinds of a class of this file by its bases (what FileContext finds), None where
    # they are not known (no model, or a class the model does not summarise).
    class_kinds: Callable[[str], frozenset[str] | None] = lambda name: None

    def add(self, nodes: Iterable[ast.AST]) -> "Names":
        """These names plus the imports and bindings among ``nodes`` (a unit's), laid over
        the file's without copying them (every unit a shape asks about makes one)."""
        aliases: dict[str, set[str]] = {}
        bindings: dict[str, list[ast.AST]] = {}
        collect(nodes, aliases, bindings, self.absolute)
        if not aliases and not bindings:
            return self
        return dataclasses.replace(self, aliases=_Layered(self.aliases, aliases, set.union),  # type: ignore[arg-type]
                                   bindings=_Layered(self.bindings, bindings, list.__add__))  # type: ignore[arg-type]


class _Layered(Mapping):
    """A unit's names over its file's: a name both bind holds both values (``join``)."""

    def __init__(self, base: Mapping, top: dict, join: Callable) -> None:
        self.base, self.top, self.join = base, top, join

    def __getitem__(self, key):
        top, base = self.top.get(key), self.base.get(key)
        if top is None or base is None:
            if top is None and base is None:
                raise KeyError(key)
            return base if top is None else top
        return self.join(base, top)

    def __contains__(self, key) -> bool:
        return key in self.top or key in self.base

    def __iter__(self):
        yield from self.base
        yield from (key for key in self.top if key not in self.base)

    def __len__(self) -> int:
        return len(self.base) + sum(key not in self.base for key in self.top)


def collect(nodes: Iterable[ast.AST], aliases: dict[str, set[str]], bindings: dict[str, list[ast.AST]],
            absolute: Callable[[str | None, int], str | None] | None = None) -> None:
    """Imports and bindings as FileContext records them (a superset: every scope at once);
    ``absolute`` writes out relative imports as FileContext does."""
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                aliases.setdefault(local, set()).add(alias.name if alias.asname else local)
        elif isinstance(node, ast.ImportFrom):
            base = absolute(node.module, node.level) if absolute and node.level else None
            for alias in node.names:
                aliases.setdefault(alias.asname or alias.name, set()).add(f"{node.module or ''}.{alias.name}")
                if base:
                    aliases[alias.asname or alias.name].add(f"{base}.{alias.name}")
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            bindings.setdefault(node.targets[0].id, []).append(node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            bindings.setdefault(node.target.id, []).append(node.value)
        elif isinstance(node, ast.withitem) and isinstance(node.optional_vars, ast.Name):
            bindings.setdefault(node.optional_vars.id, []).append(node.context_expr)
        elif isinstance(node, ast.arg) and node.annotation is not None:
            bindings.setdefault(node.arg, []).append(node.annotation)


def qualified_names(expr: ast.AST, names: Names) -> list[str]:
    """The names a dotted expression may stand for: its head written out through each
    import it may come from (``nn.Linear`` -> ``torch.nn.Linear``), and as written."""
    name = dotted(expr)
    if name is None:
        return []
    first, dot, rest = name.partition(".")
    return [head + dot + rest for head in names.aliases.get(first, set()) | {first}]
