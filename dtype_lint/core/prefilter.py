"""Choose the parts of a file that can hold a finding, so LibCST parses only those.

Parsing with LibCST and walking the tree costs about two parses per file, and the rules'
whole-file triggers (``float``, ``def ``, ``lambda``...) match nearly every file. This
module uses CPython's ``ast`` (written in C, several times faster than LibCST) to cut a
file into *units* (top-level statements, and the members of top-level classes; a
function is always kept whole, because rules keep state across a function's
statements) and keeps

* **targets**: units whose text matches a rule's *narrow trigger* (below), or that
  mention a name bound by an import or assignment whose text matches one (a hazard whose
  dtype or sink is only reachable through an alias);
* **context**: units that bind a name some kept unit mentions (imports, module-level
  and class-body assignments, functions and classes by name, at any depth), because
  :class:`~dtype_lint.core.context.FileContext` looks names up by name; transitively;
* the header of every class one of whose members is kept (a ``pass`` stands in for an
  empty body).

The kept units are copied verbatim, line for line, so columns are unchanged and a line
map turns the reduced file's lines back into the original's. Whenever the file cannot be
cut safely (``ast`` rejects it, ``\\r`` line ends, a rule without a narrow trigger) the
whole file is parsed instead.

The narrow triggers restate, as text, what each rule's detection needs; they must be
kept in step with the rules. ``tests/test_speed_features.py`` checks that findings are
identical with and without the prefilter on the fixtures and every rule example, and
``benchmarks/speed.py`` checks it over the whole benchmark corpus.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import itertools
import re
import symtable
import warnings
from typing import Callable, Iterable, Iterator

from dtype_lint.core import shapes
from dtype_lint.frameworks.bases import TORCH_MODULE_BASES


_FLOAT_ATTR = re.compile(r"float\b(?!\s*\()")  # torch.float, not a float(...) call
_SINGLE = re.compile(r"single\b")
# `from torch import float`: the bare name then means float32 wherever it is used.
_BARE_IMPORT = re.compile(r"\bimport\s+(?:\([^)]*|[^\n;]*)\b(?:float|single)\b")
_DTYPE_WORD = re.compile(r"dtype|float|half|double|bfloat16|single|getattr")
_CAST_METHOD = re.compile(r"\.\s*(?:half|bfloat16|double|float)\s*\(")
_TYPE_CAST = re.compile(r"\.\s*(?:to|type|astype)\s*\(")
_SINK_WORDS = ("spawn", "start_processes", "Process", "Pool")
_ATTR_STORE = re.compile(r"\.\s*[A-Za-z_]\w*\s*=(?!=)")
_FORWARD_STORE = re.compile(r"\.\s*forward\s*=(?!=)")
_TREE_MAP = re.compile(r"tree_map|tree\.map|map_with_path")
_ITEMS = re.compile(r"\bitems\b")
# Words that make an import or assignment's bound names worth following: any rule's
# trigger text, dtype spellings, and what builds a callable that cannot be pickled.
_TAINT = re.compile(
    r"float|half|double|single|bfloat16|dtype|spawn|start_processes|Process|Pool|DataLoader|Dataset"
    r"|transform|lambda|partial|tree|items|convert|cast|to_fp16|to_bf16"
)


@dataclasses.dataclass(frozen=True)
class Unit:
    """A run of whole lines (1-based, inclusive) that is kept or dropped as one."""

    start: int
    end: int
    node: ast.AST | None  # None for several simple statements sharing lines
    nodes: tuple[ast.AST, ...]
    is_function: bool


@dataclasses.dataclass(frozen=True)
class Reduced:
    """The kept lines as one text, and the original line of each of its lines."""

    text: str
    lines: tuple[int, ...]  # lines[i] is the original line of reduced line i + 1 (0: synthetic)
    codes: frozenset[str] = frozenset()  # the rules that can find something in it


def _literals(patterns: Iterable[str]) -> list[str] | None:
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


@functools.lru_cache(maxsize=32)
def _import_words(options) -> re.Pattern[str]:
    """Pieces of the options that name sinks, pipeline stages and cast helpers: an import
    of one of them (renamed or not) makes its local name worth following."""
    pieces = _literals([p.rpartition(":")[0] for p in options.extra_pickling_sinks]
                       + list(options.pipeline_stages) + list(options.cast_helpers))
    return _words(pieces or [])


def _words(words: list[str], whole: bool = False) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(w) for w in words) or r"(?!)"
    return re.compile(rf"\b(?:{alternatives})\b" if whole else alternatives)


@dataclasses.dataclass(frozen=True)
class Syntax:
    """A unit's statements, for the rules whose trigger also checks their shape."""

    nodes: tuple[ast.AST, ...]
    lines: list[str]
    function_text: Callable[[str], str]  # the text of this file's functions of that name
    file_names: Callable[[], shapes.Names]  # the file's imports, classes and outer bindings

    @functools.cached_property
    def index(self) -> shapes.Index:
        return shapes.Index(self.nodes)

    @functools.cached_property
    def _names(self) -> shapes.Names:
        return self.file_names().add(self.index(ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign,
                                                ast.withitem, ast.arg))

    def names(self) -> shapes.Names:
        """What the unit can resolve a name through: the file's names and its own (DTL303,
        DTL204), built once, when a rule first asks."""
        return self._names


# (unit text, may hold a local callable, the unit's syntax or None for a whole-file
# text test) -> whether a finding of the rule may lie in it.
Predicate = Callable[[str, bool, "Syntax | None"], bool]


@functools.lru_cache(maxsize=32)
def narrow_triggers(codes: tuple[str, ...], options) -> dict[str, Predicate] | None:
    """A predicate per rule code: False means no finding of that rule can lie in a unit
    with this text. None when some rule has no narrow trigger (parse whole files)."""
    out: dict[str, Predicate] = {}
    for code in codes:
        predicate = _narrow_trigger(code, options)
        if predicate is None:
            return None
        out[code] = predicate
    return out


# Literal tests first: `in` scans far faster than a regex without a literal prefix.
# Four rules test the same unit text in turn.
@functools.lru_cache(maxsize=16)
def _f32(text: str) -> bool:
    """Whether the text may spell float32 (dtypes.dtype_name): float32, `.single`,
    "single", or torch's `.float` attribute (whitespace may follow the dot)."""
    if "float32" in text or ("import" in text and _BARE_IMPORT.search(text)):
        return True
    return ("single" in text and _after_dot_or_quote(text, _SINGLE, "'\"")) or (
        "float" in text and _after_dot_or_quote(text, _FLOAT_ATTR, ""))


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


def _cast_call(text: str) -> bool:
    if "." not in text or "(" not in text:
        return False
    if ("float" in text or "half" in text or "double" in text) and _CAST_METHOD.search(text):
        return True
    # names_dtype accepts any spelling of "dtype" in the argument, in any case.
    return bool(_TYPE_CAST.search(text) and _DTYPE_WORD.search(text.lower()))


def _compute_names(options) -> frozenset[str]:
    """The parameter and field names DTL101 reports a float32 default of."""
    return frozenset(options.compute_dtype_names) - frozenset(options.param_dtype_names)


def _narrow_trigger(code: str, options) -> Predicate | None:
    if code == "DTL101":
        names = _compute_names(options)
        return lambda t, lc, u: _f32(t) and any(name in t for name in names) and (
            u is None or shapes.compute_default(u.index, u.lines, names, _f32))
    if code == "DTL102":
        return lambda t, lc, u: _f32(t) and (u is None or shapes.fallback(u.index, u.lines, _f32))
    if code == "DTL104":
        return lambda t, lc, u: _f32(t) and (u is None or shapes.pinned_beside_input(u.index, u.lines, _f32))
    if code == "DTL103":
        return lambda t, lc, u: _f32(t) and ("forward" in t or "__call__" in t) and (
            u is None or shapes.pinned_in_forward(u.index, u.lines, _f32))
    if code == "DTL201":
        sinks = _literals(p.rpartition(":")[0] for p in options.extra_pickling_sinks)
        if sinks is None:
            return None
        extra = _words(sinks)
        return lambda t, lc, u: lc and (any(w in t for w in _SINK_WORDS) or bool(extra.search(t)))
    if code == "DTL202":
        return lambda t, lc, u: lc and "DataLoader" in t
    if code == "DTL203":
        keywords = _words([p.rpartition(":")[2] for p in options.wrapper_transforms])
        return lambda t, lc, u: lc and bool(keywords.search(t))
    if code == "DTL204":
        stages = _literals(options.pipeline_stages)
        if stages is None:
            return None
        owners = _words(["Dataset", *stages])
        return lambda t, lc, u: bool(
            (lc and _ATTR_STORE.search(t)
             and (u is None or shapes.callable_store(u.index, u.lines, u.nodes[0], u.names)))
            or ("forward" in t and _FORWARD_STORE.search(t))
            or (lc and owners.search(t)))
    if code == "DTL301":
        return lambda t, lc, u: bool(_TREE_MAP.search(t)) and (
            u is None or shapes.tree_map_cast(u.index, u.lines, u.function_text))
    if code == "DTL302":
        return lambda t, lc, u: "items" in t and bool(_ITEMS.search(t)) and _cast_call(t)
    if code == "DTL303":
        helpers = _literals(options.cast_helpers)
        if helpers is None:
            return None
        named = _words(helpers)
        return lambda t, lc, u: bool(named.search(t)) or (
            _cast_call(t) and (u is None or shapes.module_cast(u.index, u.names)))
    if code == "DTL304":
        return lambda t, lc, u: "tree_" in t
    return None


def reduce_source(text: str, codes: Iterable[str], options, tree: ast.Module | None = None) -> Reduced | None:
    """The part of ``text`` to parse; ``Reduced("", ())`` when nothing can be found,
    None when the whole file must be parsed. ``tree``: the text's ``ast``, if the caller
    has it already (flake8 parses every file)."""
    triggers = narrow_triggers(tuple(codes), options)
    if triggers is None or "\r" in text:
        return None
    if not any(p(text, True, None) for p in triggers.values()):
        # Nothing to find, but a file that does not parse is reported whether or not the
        # prefilter is on. Building the symbol table checks that without making Python
        # objects of the tree (half the time of ast.parse).
        if tree is None and _checked(symtable.symtable, text, "<file>", "exec") is None:
            return None
        return Reduced("", ())
    if tree is None:
        tree = _checked(ast.parse, text)
        if tree is None:
            return None
    return _Planner(tree, text, triggers, options).reduce()


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


_DEF_NAME = re.compile(r"\b(?:def|class)\s+([A-Za-z_]\w*)")
_CLASS_NAME = re.compile(r"\bclass\s+([A-Za-z_]\w*)")
_NESTED_DEF = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]", re.MULTILINE)
# Values whose binding a rule follows by name (pools, process contexts, callables that
# cannot be pickled); dtypes are resolved through imports only.
_BOUND_VALUE = re.compile(r"lambda|partial|Pool|Process|get_context|spawn")
# A bare name that means a dtype once imported from a framework (`from torch import float`).
_BARE_DTYPES = frozenset({"float", "single", "half", "double"})


class _Planner:
    def __init__(self, tree: ast.Module, text: str, triggers: dict[str, Predicate], options) -> None:
        self.text = text
        self.lines = lines = text.split("\n")
        self.options = options
        self.triggers = triggers
        self.codes: set[str] = set()
        self.units = _units(tree.body)
        # The leaves: each unit, or for a top-level class with a body of its own, each
        # member (cut the same way); key (unit index, member index or -1).
        self.leaves: list[tuple[tuple[int, int], Unit]] = []
        self.members: dict[int, list[Unit]] = {}
        for index, unit in enumerate(self.units):
            node = unit.node
            if isinstance(node, ast.ClassDef) and _body_on_own_lines(node, lines):
                self.members[index] = _units(node.body)
                self.leaves.extend(((index, i), m) for i, m in enumerate(self.members[index]))
            else:
                self.leaves.append(((index, -1), unit))
        self.texts = ["\n".join(lines[leaf.start - 1:leaf.end]) for _, leaf in self.leaves]
        # Statements (and classes) outside functions: where imports and bindings hold for
        # the whole file. The split classes' members are leaves of their own.
        self.outer = [node for _, leaf in self.leaves if not leaf.is_function
                      for node in _outside_functions(leaf.nodes)]
        self._binds: dict[int, set[str]] = {}
        self._mentions: dict[int, set[str]] = {}
        self._syntax: dict[int, Syntax] = {}
        self._names: shapes.Names | None = None
        self.aliased: set[int] = set()  # leaves that mention a tainted name
        self.compute_names = _compute_names(options)
        self.stubs: dict[tuple[int, int], int] = {}  # kept functions whose body gives way to `pass`
        # A textual test is enough here (a tainted name in a string only keeps more).
        self.imported: dict[str, str] = {}  # tainted import aliases -> the qualified name
        self._aliases: re.Pattern[str] | None = None
        self.import_words = _import_words(options)
        self.tainted = self._taint(self.import_words)
        self.tainted_words = _words(sorted(self.tainted), whole=True) if self.tainted else None

    def binds(self, position: int) -> set[str]:
        """The names a leaf binds where FileContext looks them up (see _binds)."""
        if position not in self._binds:
            leaf = self.leaves[position][1]
            self._binds[position] = set(_DEF_NAME.findall(self.texts[position])) if leaf.is_function else _binds(leaf)
        return self._binds[position]

    def mentions(self, position: int) -> set[str]:
        """The names a leaf reads or binds (not attribute names): what it may look up."""
        if position not in self._mentions:
            self._mentions[position] = {n.id for n in self.syntax(position).index(ast.Name)}
        return self._mentions[position]

    def syntax(self, position: int) -> Syntax:
        if position not in self._syntax:
            self._syntax[position] = Syntax(self.leaves[position][1].nodes, self.lines, self.function_text, self.names)
        return self._syntax[position]

    def names(self) -> shapes.Names:
        """Imports and bindings outside functions, and every class name (DTL303's shape)."""
        if self._names is None:
            aliases: dict[str, set[str]] = {}
            bindings: dict[str, list[ast.AST]] = {}
            shapes.collect(self.outer, aliases, bindings)
            classes = frozenset(_CLASS_NAME.findall(self.text))
            self._names = shapes.Names(aliases, classes, bindings, TORCH_MODULE_BASES | frozenset(
                self.options.module_bases), tuple(self.options.module_names))
        return self._names

    def function_text(self, name: str) -> str:
        """The text of every leaf defining a function (at any depth) called ``name``."""
        return "\n".join(text for position, ((_, leaf), text) in enumerate(zip(self.leaves, self.texts))
                         if leaf.is_function and name in self.binds(position))

    def reduce(self) -> Reduced:
        keep: set[tuple[int, int]] = set()
        headers: set[int] = set()
        needed: set[str] = set()
        for position, (key, leaf) in enumerate(self.leaves):
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
        """For a function kept for DTL101 alone, the line its body starts on if only its
        parameters can hold the finding: the body can then give way to ``pass`` (as for
        context, below) when it holds no DTL101 shape of its own. Not where the unit
        mentions an alias: the shape check sees only the alias."""
        if matched != {"DTL101"} or position in self.aliased:
            return None
        body = self._stub_body(position, leaf)
        if body is None:
            return None
        inner = shapes.Index(leaf.node.body)  # type: ignore[union-attr]
        return None if shapes.compute_default(inner, self.lines, self.compute_names, _f32) else body

    def _stub_body(self, position: int, leaf: Unit) -> int | None:
        """For a function kept only because it is named, the line its body starts on, if
        the body can give way to ``pass``: FileContext needs the name, decorators and
        parameters, and a body only when it casts (DTL301 follows a function passed to a
        tree map) or defines functions or classes (bound by name at any depth)."""
        node = leaf.node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or not _body_on_own_lines(node, self.lines):
            return None
        start = _header_start(node.body[0])
        body = "\n".join(self.lines[start - 1:leaf.end])
        if shapes.LEAF_CAST.search(body) or (("def" in body or "class" in body) and _NESTED_DEF.search(body)):
            return None
        return start

    def _keep(self, position: int, key: tuple[int, int], keep: set, headers: set[int], needed: set[str],
              header_only: bool = False) -> None:
        keep.add(key)
        if header_only:
            node = self.leaves[position][1].node
            parts = [*node.decorator_list, node.args, node.returns]  # type: ignore[union-attr]
            needed |= {n.id for part in parts if part is not None for n in ast.walk(part) if isinstance(n, ast.Name)}
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
        needed |= {n.id for part in parts for n in ast.walk(part) if isinstance(n, ast.Name)}

    def matches(self, position: int, unit: Unit) -> set[str]:
        """The rules that may find something in the unit."""
        text = self.texts[position]
        node = unit.node
        body_line = unit.start
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body_line = node.body[0].lineno
            if _docstring(node, self.lines):
                # A docstring full of dtype words is not code; skip its lines when matching.
                doc = node.body[0]
                body_line = doc.end_lineno + 1
                text = "\n".join(self.lines[unit.start - 1:doc.lineno - 1] + self.lines[doc.end_lineno:unit.end])
        body = "\n".join(self.lines[body_line - 1:unit.end]) if unit.is_function else text
        local = "lambda" in text or "partial" in text or (
            unit.is_function and ("def " in body or "class " in body) and bool(_NESTED_DEF.search(body)))
        syntax = self.syntax(position)
        matched = {code for code, predicate in self.triggers.items() if predicate(text, local, syntax)}
        mentioned = set(self.tainted_words.findall(self.texts[position])) if self.tainted_words else set()
        # Imports inside the unit (a function's own) are not among the file's tainted
        # names; a plain import statement's names are.
        inner = {} if "import" not in text or isinstance(node, (ast.Import, ast.ImportFrom)) else dict(
            pair for n in syntax.index(ast.Import, ast.ImportFrom) for pair in _tainted_imports(n, self.import_words))
        if mentioned or inner:
            self.aliased.add(position)
            # Reached through an alias: test the text with what each alias stands for, and
            # without the shape checks, which see only the alias.
            expansions = "\n".join(self.tainted[name] for name in sorted(mentioned) if name not in self.imported)
            local = local or "lambda" in expansions or "partial" in expansions
            spelled = self._spell(text)
            if inner:
                spelled = _words(sorted(inner), whole=True).sub(lambda m: inner[m.group()], spelled)
            expanded = f"{spelled}\n{expansions}"
            matched |= {code for code, predicate in self.triggers.items() if predicate(expanded, local, None)}
        return matched

    def _spell(self, text: str) -> str:
        """The text with each import alias written out (`jt.map` -> `jax.tree.map`)."""
        if not self.imported:
            return text
        if self._aliases is None:
            self._aliases = _words(sorted(self.imported), whole=True)
        return self._aliases.sub(lambda m: self.imported[m.group()], text)

    def _taint(self, import_words: re.Pattern[str]) -> dict[str, str]:
        """Names through which a unit can reach a rule's trigger without spelling it, each
        with the text it stands for: import aliases of trigger words (their qualified
        name), bindings outside functions whose value a rule follows by name (the value's
        text), dataset classes (their header), and names bound from those, to a fixpoint."""
        tainted: dict[str, str] = {}
        follow: list[tuple[set[str], set[str], str]] = []  # (bound names, names in the value, its text)
        # Split classes: their header only (their members are leaves of their own).
        headers = [self.units[index].node for index in self.members]
        for node in itertools.chain(headers, self.outer):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for local, qualified in _tainted_imports(node, import_words):
                    tainted[local] = qualified
                    self.imported[local] = qualified
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                bound = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
                text = "\n".join(self.lines[node.lineno - 1:node.end_lineno])
                if _BOUND_VALUE.search(text):
                    tainted.update(dict.fromkeys(bound, text))
                follow.append((bound, {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}, text))
            elif isinstance(node, ast.ClassDef):
                header = {n.id for part in node.bases for n in ast.walk(part) if isinstance(n, ast.Name)}
                text = " ".join(shapes.lines_of(b, self.lines) for b in node.bases)
                if "Dataset" in text:
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
            return Reduced("", ())
        return Reduced("\n".join(out) + "\n", tuple(origin), frozenset(self.codes))


def _tainted_imports(node: ast.Import | ast.ImportFrom, import_words: re.Pattern[str]) -> Iterator[tuple[str, str]]:
    """(local name, qualified name) for each name of the import worth following: renamed
    (or a bare dtype such as `from torch import float`) and naming a trigger word, or
    naming a configured sink, stage or cast helper."""
    module = getattr(node, "module", None) or ""
    for alias in node.names:
        qualified = f"{module}.{alias.name}" if module else alias.name
        local = alias.asname or alias.name.split(".")[0]
        renamed = local != qualified.rsplit(".", 1)[-1] or local in _BARE_DTYPES
        if (renamed and _TAINT.search(qualified)) or import_words.search(qualified):
            yield local, qualified


def _outside_functions(nodes: tuple[ast.AST, ...]) -> Iterator[ast.AST]:
    """Statements (and class definitions) not inside a function, at any depth."""
    stack = list(nodes)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.expr)):
            stack.extend(ast.iter_child_nodes(node))


def _body_on_own_lines(node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str]) -> bool:
    """Whether the body starts on a line of its own, so the header is whole lines."""
    first = node.body[0]
    start = _header_start(first)
    if start <= node.lineno:
        return False
    return not lines[start - 1].encode("utf-8")[: first.col_offset if start == first.lineno else 0].strip()


def _header_start(node: ast.AST) -> int:
    decorators = getattr(node, "decorator_list", ())
    return min([node.lineno] + [d.lineno for d in decorators])


def _units(body: list[ast.stmt]) -> list[Unit]:
    """Statements as units of whole lines; statements sharing a line are one unit."""
    units: list[Unit] = []
    for stmt in body:
        start, end = _header_start(stmt), stmt.end_lineno or stmt.lineno
        is_function = isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
        if units and start <= units[-1].end:
            last = units[-1]
            units[-1] = Unit(last.start, max(end, last.end), None, last.nodes + (stmt,),
                             last.is_function or is_function)
        else:
            units.append(Unit(start, end, stmt, (stmt,), is_function))
    return units


def _docstring(node: ast.AST, lines: list[str]) -> bool:
    """Whether the body opens with a docstring on lines of its own (nothing else of the
    code shares them, so leaving them out of the text to match loses nothing)."""
    body = getattr(node, "body", None)
    if not (body and len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)):
        return False
    doc = body[0]
    alone = not lines[doc.lineno - 1].encode("utf-8")[: doc.col_offset].strip()
    return alone and body[1].lineno > (doc.end_lineno or doc.lineno)


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _binds(unit: Unit) -> set[str]:
    """Names the unit binds where FileContext keeps them for the rest of the file: every
    function and class name at any depth, and imports and assignments outside functions."""
    names: set[str] = set()
    for node in _outside_functions(unit.nodes):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.update(n.name for n in ast.walk(node) if isinstance(n, _DEFINITIONS))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update(alias.asname or alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.withitem)):
            targets = node.targets if isinstance(node, ast.Assign) else [
                node.optional_vars if isinstance(node, ast.withitem) else node.target]
            names.update(n.id for t in targets if t is not None for n in ast.walk(t) if isinstance(n, ast.Name))
    return names
