"""A read-only batched walk over a LibCST tree, in the order LibCST itself visits.

``libcst.visit_batched`` serves visitors and transformers with one code path: it rebuilds
and revalidates every node on the way back up, and looks up each visitor's methods with
``inspect.getmembers`` on every call. Rules only read the tree, so this walk follows the
child fields in place, skips the subtrees that hold only whitespace and punctuation (no
rule and no scope hook looks at them), and dispatches by node type through tables built
once per rule class. On the benchmark corpus it takes about a quarter of the time.

The child order of each node class is read once from the field names LibCST's own
``_visit_and_replace_children`` passes to its visit helpers, so it is lexical order by
construction; ``tests/test_traversal.py`` checks it against ``libcst.visit_batched``
for every kind of code node.
"""

from __future__ import annotations

import functools
from typing import Callable, Iterable, Iterator

import libcst as cst

# Fields holding only whitespace, comments, brackets and operator tokens.
_SKIPPED_FIELDS = frozenset({
    "lpar", "rpar", "lbracket", "rbracket", "lbrace", "rbrace", "leading_lines",
    "lines_after_decorators", "header", "footer", "comma", "semicolon", "equal", "colon",
    "dot", "operator", "trailing_whitespace", "newline", "star_tok", "second_colon",
    "whitespace", "asynchronous", "await_token",
})

Hook = Callable[[cst.CSTNode], object]


@functools.lru_cache(maxsize=None)
def child_fields(cls: type) -> tuple[str, ...]:
    """The fields of ``cls`` that may hold code, in the order LibCST visits them.

    Each child visit in LibCST's ``_visit_and_replace_children`` names its field as a
    string (``visit_required(self, "name", self.name, visitor)``), and the compiler keeps
    string constants in the order the code first uses them: reading them from the
    function's code object costs microseconds, where ``inspect.getsource`` costs a file
    read per class."""
    fields = cls.__dataclass_fields__
    constants = cls._visit_and_replace_children.__code__.co_consts
    names = [c for c in constants if type(c) is str and c in fields]
    return tuple(n for n in dict.fromkeys(names) if n not in _SKIPPED_FIELDS and not n.startswith("whitespace"))


@functools.lru_cache(maxsize=None)
def _method_names(cls: type) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """For a visitor class: node type name -> (its visit_ method names, its leave_ ones).
    LibCST's own visitor classes hold only empty stubs, so they are not searched."""
    table: dict[str, tuple[list[str], list[str]]] = {}
    seen: set[str] = set()
    for klass in cls.__mro__:
        if klass.__module__.split(".")[0] in ("libcst", "builtins"):
            continue
        for name, member in vars(klass).items():
            kind, _, node_type = name.partition("_")
            if kind not in ("visit", "leave") or not node_type or name in seen or not callable(member):
                continue
            seen.add(name)
            if not isinstance(getattr(cst, node_type, None), type):
                raise TypeError(f"{cls.__name__}.{name}: only visit_<Node> and leave_<Node> are supported")
            visits, leaves = table.setdefault(node_type, ([], []))
            (visits if kind == "visit" else leaves).append(name)
    return {node_type: (tuple(v), tuple(lv)) for node_type, (v, lv) in table.items()}


def descendants(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The node and every code node below it (the fields :func:`walk` follows)."""
    stack = [node]
    while stack:
        node = stack.pop()
        yield node
        for field in child_fields(type(node)):
            value = getattr(node, field)
            if isinstance(value, (tuple, list)):
                stack.extend(v for v in value if isinstance(v, cst.CSTNode))
            elif isinstance(value, cst.CSTNode):
                stack.append(value)


def parents(root: cst.CSTNode) -> dict[int, cst.CSTNode]:
    """The parent of each code node below ``root`` (the fields :func:`walk` follows), by
    the child's id."""
    found: dict[int, cst.CSTNode] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        for field in child_fields(type(node)):
            value = getattr(node, field)
            for child in value if isinstance(value, (tuple, list)) else (value,):
                if isinstance(child, cst.CSTNode):
                    found[id(child)] = node
                    stack.append(child)
    return found


def walk(
    roots: Iterable[cst.CSTNode],
    visitors: Iterable[object],
    enter: tuple[tuple[type, ...], Hook] | None = None,
    leave: tuple[tuple[type, ...], Hook] | None = None,
) -> Iterator[cst.CSTNode]:
    """Walk each root in turn (a module's statements), yielding it once walked: call each
    visitor's ``visit_<Type>`` before a node's children and ``leave_<Type>`` after them;
    ``enter``/``leave`` are (node types, hook) run around the visitors' own."""
    visit_table: dict[str, list[Hook]] = {}
    leave_table: dict[str, list[Hook]] = {}
    for visitor in visitors:
        for node_type, (visit_names, leave_names) in _method_names(type(visitor)).items():
            visit_table.setdefault(node_type, []).extend(getattr(visitor, n) for n in visit_names)
            leave_table.setdefault(node_type, []).extend(getattr(visitor, n) for n in leave_names)
    enter_types, enter_hook = enter if enter else ((), None)
    leave_types, leave_hook = leave if leave else ((), None)
    no_hooks: list[Hook] = []
    # Per node class: (fields to follow, visit hooks, leave hooks), built on first sight;
    # exact type lookups here, because isinstance on LibCST's abstract bases is slow.
    plans: dict[type, tuple[tuple[str, ...], list[Hook], list[Hook]]] = {}

    def plan(cls: type) -> tuple[tuple[str, ...], list[Hook], list[Hook]]:
        name = cls.__name__
        visits = ([enter_hook] if enter_hook is not None and issubclass(cls, enter_types) else [])
        leaves = list(leave_table.get(name, no_hooks))
        if leave_hook is not None and issubclass(cls, leave_types):
            leaves.append(leave_hook)
        plans[cls] = (child_fields(cls), visits + visit_table.get(name, no_hooks), leaves)
        return plans[cls]

    leaf_values: set[type] = set()  # None, MaybeSentinel: nothing to visit

    def is_node(kind: type) -> bool:
        if kind in leaf_values:
            return False
        if not issubclass(kind, cst.CSTNode):
            leaf_values.add(kind)
            return False
        plan(kind)
        return True

    def visit(node: cst.CSTNode) -> None:
        fields, visits, leaves = plans[type(node)]
        for hook in visits:
            hook(node)
        for field in fields:
            value = getattr(node, field)
            kind = type(value)
            if kind is tuple or kind is list:
                for child in value:
                    if type(child) in plans or is_node(type(child)):
                        visit(child)
            elif kind in plans or is_node(kind):
                visit(value)
        for hook in leaves:
            hook(node)

    for root in roots:
        if is_node(type(root)):
            visit(root)
        yield root
