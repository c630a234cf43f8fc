"""What the pickling rules' prefilters share: where a value followed by
:mod:`dtype_lint.concepts.unpicklable` may start or end outside the unit that holds the sink.

The flow follows a value across units in three ways the unit's own text does not show:
a name bound elsewhere (the prefilter follows names bound outside functions, and keeps
the units binding a kept unit's names), a function of the file called as a factory or a
generator (kept by name; ``BODY_WORDS`` keeps its body), and ``self.attr`` stored in
another method of the class (``stores_on_self`` keeps the storing method wherever the
file holds the rule's sink words).
"""

from __future__ import annotations

import ast
import re
from typing import Sequence

from dtype_lint.concepts.unpicklable import HOLDERS
from dtype_lint.core.shapes import Syntax, dotted, in_word, lines_of, may_call, qualified_names

# A function kept as context keeps its body when it may make a source: a lambda, a
# partial, or a yield (a generator function); nested definitions keep it anyway.
BODY_WORDS = re.compile(r"\blambda\b|partial|\byield\b")


def file_has(u: Syntax, pattern: re.Pattern[str], words: tuple[str, ...]) -> bool:
    """Whether the file's text matches ``pattern``, searched once per file. Every match
    holds one of ``words``: looking for them first (`in`) spares most files the search."""
    has = u.file_memo.setdefault("has", {})
    if pattern not in has:
        text = u.file_text
        has[pattern] = any(word in text for word in words) and bool(pattern.search(text))
    return has[pattern]


def stores_on_self(text: str, u: Syntax, imported: bool = False) -> bool:
    """Whether the unit (its text: ``text``) stores on an attribute of ``self`` a value the
    flow may take for a source: another method may send it to a sink. ``imported``: what
    a call of another file's factory returns counts too."""
    if "self" not in text:
        return False
    return any(isinstance(owner, ast.Name) and owner.id == "self" for owner, _ in callable_stores(text, u)) or (
        imported and any(isinstance(node.value, ast.Call) and _imported_factory(node.value, u)
                         for node in u.index(ast.Assign) for t in node.targets
                         if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"))


_NESTED = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]", re.MULTILINE)
# Names of parameters that may hold a generator (concepts.unpicklable's _holds_generator).
GENERATOR_PARAM = re.compile(r"(?:^|_)gen(?:erator)?$")
GENERATOR_WORDS = re.compile(r"\bgen\b|_gen\b|generator|Generator|Iterator|\byield\b")
# The same words that end a word, searched from their first letter (a search for a
# literal start is far faster than one for an alternation); the start is checked apart.
_WORD_END = {"gen": re.compile(r"gen\b"), "yield": re.compile(r"yield\b")}


def generator_words(text: str) -> bool:
    """``GENERATOR_WORDS.search(text)``: its literal words by ``in``, ``gen`` (at a word's
    start or after ``_``) and ``yield`` (at a word's start) by a search each."""
    if "generator" in text or "Generator" in text or "Iterator" in text:
        return True
    return any(word in text and any(not in_word(text, m.start() - 1) or (word == "gen" and text[m.start() - 1] == "_")
                                    for m in _WORD_END[word].finditer(text)) for word in _WORD_END)
# Text tests that let a unit skip the ast where it cannot hold a source (see
# _may_hold_source): literal words first (`in` scans far faster than a regex), for
# lambdas, partials and generator parameters or annotations (GENERATOR_PARAM and
# GENERATOR_WORDS hold "gen", "Gen" or "Iterator").
_SOURCE_WORDS = ("lambda", "partial", "gen", "Gen", "Iterator", "yield")
_DEFINITION = re.compile(r"\b(?:def|class)\b")
# A call of a call's result (`wraps(f)(g)`): comments and line continuations may lie between.
_CALL_OF_CALL = re.compile(r"\)(?:[\s\\]|#[^\n]*\n)*\(")
# `forward` not called: where a store to `.forward` may be.
_FORWARD = re.compile(r"\bforward\b(?![ \t]*\()")


def may_make_source(text: str, lc: bool, u: Syntax | None, via_self: bool = True, imported: bool = True) -> bool:
    """Whether the unit may hold a value the flow takes for a source, beyond the
    prefilter's local-callable test ``lc``: a generator (expression, parameter, or a
    generator function's call), ``self.attr`` (stored by another method; not with
    ``via_self=False``), a call of a function of the file that may return a local
    function, or (``imported``) of a function of another file that returns a callable
    of its own. Without the unit's syntax, any call counts."""
    if lc or (via_self and "self" in text) or generator_words(text):
        return True
    if u is None:
        return "(" in text
    # A generator expression holds `for`; a factory's call, its name.
    if may_hold_generator_expression(text) and u.index(ast.GeneratorExp):
        return True
    return (_mentions_factory(text, u) and any(factory_call(call, u) for call in u.index(ast.Call))) or (
        imported and any(_imported_factory(call, u) for call in u.index(ast.Call)))


def may_hold_generator_expression(text: str) -> bool:
    """Whether the text may hold a generator expression: the word `for` with something
    before it on its line (a comprehension's element), or starting a line that does not
    end a `for` statement's header (a comprehension written over several lines). Most
    units mention `for` only as a loop, or in `forward`/`format`, and so need no index
    of their ast to find none. (A literal search and a check of each hit: a regex with no
    literal start took 15 times as long.)"""
    at = text.find("for")
    while at >= 0:
        end = at + 3
        if end < len(text) and text[end] in " \t([\\" and (at == 0 or not in_word(text, at - 1)):
            start = text.rfind("\n", 0, at) + 1
            if text[start:at].strip():
                return True
            stop = text.find("\n", end)
            if not text[end:stop if stop >= 0 else len(text)].split("#", 1)[0].rstrip().endswith(":"):
                return True
        at = text.find("for", end)
    return False


def _imported_factory(call: ast.Call, u: Syntax) -> bool:
    """A call, through an import, of a function of another file that returns a callable
    of its own (the project model's summary: concepts.unpicklable follows it)."""
    written = dotted(call.func)
    if not written or written.rsplit(".", 1)[-1][:1].isupper():
        return False
    names = u.names()
    return written.split(".", 1)[0] in names.aliases and any(
        names.returns_local(q) for q in qualified_names(call.func, names))


def factory_call(call: ast.Call, u: Syntax) -> bool:
    """A call of a function of the file (or of a method through ``self``) that may return a
    local function or a generator."""
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
        name = func.attr
    elif isinstance(func, ast.Name):
        name = func.id
    else:
        return False
    return _factory(name, u)


def _factory(name: str, u: Syntax) -> bool:
    """Whether one of the file's functions called ``name`` may return a local function or
    a generator (the text of the unit defining it holds a lambda, a partial or a yield,
    or more than one definition), answered once per file and name."""
    functions = u.file_memo.setdefault("factories", {})
    if name not in functions:
        functions[name] = any(map(_may_return_local, u.function_texts(name)))
    return functions[name]


def _may_return_local(body: str) -> bool:
    # BODY_WORDS.search(body) by literal finds (far faster than its alternation), and
    # _NESTED.findall only where enough definitions may be.
    return bool("partial" in body or _has_word(body, "lambda") or _has_word(body, "yield")
                or (_spaced_definitions(body) > 1 and len(_NESTED.findall(body)) > 1))


def _has_word(text: str, word: str) -> bool:
    """Whether ``word`` is in the text as a whole word (``\\bword\\b``)."""
    start = text.find(word)
    while start >= 0:
        if not (in_word(text, start - 1) or in_word(text, start + len(word))):
            return True
        start = text.find(word, start + 1)
    return False


def _spaced_definitions(text: str) -> int:
    """How often ``def`` or ``class`` is followed by a space or a tab: at least the number
    of ``_NESTED`` matches (`default` and `classmethod` do not count)."""
    return sum(text.count(word + blank) for word in ("def", "class") for blank in " \t")


def _mentions_factory(text: str, u: Syntax) -> bool:
    """Whether the text may call, as ``factory_call`` reads calls, a function of the file
    that it takes for a factory (all of them found once per file)."""
    memo = u.file_memo
    if "factory_names" not in memo:
        memo["factory_names"] = frozenset(name for name in u.function_names() if _factory(name, u))
    return any(name in text and may_call(text, name) for name in memo["factory_names"])


def _may_hold_source(text: str, u: Syntax) -> bool:
    """Whether the unit's text (``text``) may hold a value ``_may_be_callable`` accepts,
    so that ``callable_stores`` need not walk its ast where it cannot: a lambda, a
    partial, a generator (expression, parameter or annotation), a nested definition (or
    a name a decorator of the unit's function takes), a store to ``forward``, a call of
    a call, or a call of a factory of the file."""
    if any(word in text for word in _SOURCE_WORDS):
        return True
    own = u.nodes[0]
    # Each word the regex finds is one of these substrings: counting them (far faster)
    # spares most units the search.
    defined = isinstance(own, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    if text.count("def") + text.count("class") > defined and len(_DEFINITION.findall(text)) > defined:
        return True
    if isinstance(own, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
            isinstance(d, ast.Call) and d.args and isinstance(d.args[0], ast.Name) for d in own.decorator_list):
        return True
    return bool("setattr" in text or ("forward" in text and _FORWARD.search(text)) or _CALL_OF_CALL.search(text)
                or _mentions_factory(text, u) or (may_hold_generator_expression(text) and u.index(ast.GeneratorExp)))


def returns_local(lc: bool, u: Syntax | None) -> bool:
    """Whether the unit is a method that returns a lambda or a function or class it
    defines: the flow follows ``self.method()`` calls there, and a name that only an
    attribute mentions keeps no unit as context."""
    if not lc or u is None or not isinstance(u.nodes[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    own = u.nodes[0]
    if not own.args.args or own.args.args[0].arg != "self":
        return False  # a function is kept by name where it is called; a method is not
    # Only where the file calls it through self.
    if own.name not in _called_through_self(u):
        return False
    local = {n.name for n in u.index(ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef) if n is not own}
    return any(isinstance(n, ast.Lambda) or (isinstance(n, ast.Name) and n.id in local)
               for r in u.index(ast.Return) if r.value is not None for n in ast.walk(r.value))


# Searched without a leading `\b` (a literal start is found far faster); the word
# boundary before `self` is checked on each match.
_SELF_CALL = re.compile(r"self\s*\.\s*(\w+)\s*\(")


def _called_through_self(u: Syntax) -> set[str]:
    """The names the file calls as ``self.name(...)``, found once per file."""
    if "self_calls" not in u.file_memo:
        text = u.file_text
        u.file_memo["self_calls"] = {m.group(1) for m in _SELF_CALL.finditer(text) if not in_word(text, m.start() - 1)}
    return u.file_memo["self_calls"]


def self_argument(call: ast.Call) -> bool:
    """Whether an argument of the call reads an attribute of ``self`` (which the flow
    follows to what other methods store there)."""
    return any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"
               for arg in [*call.args, *(k.value for k in call.keywords)] for n in ast.walk(arg))


def callee(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def callable_stores(text: str, u: Syntax) -> list[tuple[ast.AST, ast.AST]]:
    """(receiver, value) for each attribute store (or ``setattr``) of the unit (its text:
    ``text``) whose value the flow may take for a source: a lambda, a generator, a
    ``partial``, a wrapper of ``forward``, a call of a factory of the file, a transform
    container holding one, or a name this unit binds to one (or a parameter it may take
    for a generator or a wrapped function). The unit's own function is not local to
    itself."""
    if "stores" not in u.memo:
        u.memo["stores"] = _callable_stores(u) if _may_hold_source(text, u) else []
    return u.memo["stores"]


def callable_arguments(text: str, u: Syntax) -> list[tuple[ast.Call, ast.AST]]:
    """(call, argument) for each argument of the unit's calls that the flow may take for
    a source (as :func:`callable_stores` judges stored values)."""
    if "arguments" not in u.memo:
        local = _local_sources(u) if _may_hold_source(text, u) else None
        u.memo["arguments"] = [] if local is None else [
            (call, value) for call in u.index(ast.Call)
            for value in (*call.args, *(k.value for k in call.keywords))
            if _may_be_callable(value, local, u.lines, u)]
    return u.memo["arguments"]


def callable_value(text: str, u: Syntax, value: ast.AST) -> bool:
    """Whether the flow may take a value of the unit for a source."""
    return _may_hold_source(text, u) and _may_be_callable(value, _local_sources(u), u.lines, u)


def _local_sources(u: Syntax) -> set[str]:
    """The names in the unit that may hold a source: its nested functions and classes,
    parameters that may hold generators or wrapped functions, and names bound to those."""
    if "local" in u.memo:
        return u.memo["local"]
    index, lines, own = u.index, u.lines, u.nodes[0]
    local = {n.name for n in index(ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef) if n is not own}
    local.update(a.arg for a in index(ast.arg) if GENERATOR_PARAM.search(a.arg) or (
        a.annotation is not None and generator_words(lines_of(a.annotation, lines))))
    for node in index(ast.arguments):  # a parameter whose default is a lambda
        positional = [*node.posonlyargs, *node.args]
        pairs = [*zip(positional[len(positional) - len(node.defaults):], node.defaults),
                 *zip(node.kwonlyargs, node.kw_defaults)]
        local.update(a.arg for a, d in pairs if isinstance(d, ast.Lambda))
    for node in index(ast.FunctionDef, ast.AsyncFunctionDef):
        for d in node.decorator_list:  # @wraps(func): func is the decorated function
            if isinstance(d, ast.Call) and d.args and isinstance(d.args[0], ast.Name):
                local.add(d.args[0].id)
    for _ in range(2):  # names bound to what may be a source, and names bound to those
        for node in index(ast.Assign):
            if _may_be_callable(node.value, local, lines, u):
                local.update(t.id for t in node.targets if isinstance(t, ast.Name))
    u.memo["local"] = local
    return local


def _callable_stores(u: Syntax) -> list[tuple[ast.AST, ast.AST]]:
    index, lines, local = u.index, u.lines, _local_sources(u)
    pairs = [(target.value, node.value, target.attr == "forward") for node in index(ast.Assign)
             for target in node.targets if isinstance(target, ast.Attribute)]
    pairs += [(c.args[0], c.args[2], True) for c in index(ast.Call)
              if isinstance(c.func, ast.Name) and c.func.id == "setattr" and len(c.args) == 3]
    # A wrapper of forward counts where it replaces forward (DTL204's _wraps_forward).
    return [(owner, value) for owner, value, forward in pairs if _may_be_callable(value, local, lines, u, forward)]


def _may_be_callable(value: ast.AST, local: set[str], lines: Sequence[str], u: Syntax, forward: bool = False) -> bool:
    if isinstance(value, ast.IfExp):
        return (_may_be_callable(value.body, local, lines, u, forward)
                or _may_be_callable(value.orelse, local, lines, u, forward))
    if isinstance(value, ast.BoolOp):
        return any(_may_be_callable(v, local, lines, u) for v in value.values)
    if isinstance(value, (ast.Tuple, ast.List, ast.Set)):
        return any(_may_be_callable(v, local, lines, u) for v in value.elts)
    if isinstance(value, ast.Dict):
        return any(_may_be_callable(v, local, lines, u) for v in value.values)
    if isinstance(value, ast.Starred):
        return _may_be_callable(value.value, local, lines, u)
    if isinstance(value, ast.Call):
        func = value.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        # A partial or a bound method (`MethodType(f, obj)`) keeps the function it is given.
        return (name in ("partial", "MethodType") or (forward and "forward" in lines_of(value, lines)) or isinstance(func, ast.Call)
                or (u is None or factory_call(value, u))
                or (name in HOLDERS and any(_may_be_callable(a, local, lines, u)
                                         for a in [*value.args, *(k.value for k in value.keywords)])))
    return isinstance(value, (ast.Lambda, ast.GeneratorExp)) or (isinstance(value, ast.Name) and value.id in local)


