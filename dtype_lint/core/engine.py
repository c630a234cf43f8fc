"""Lint one source text: prefilter, one parse, one batched read-only traversal, suppressions.

Everything that reports a finding (the CLI, the flake8 plugin, the mypy plugin, the
tests) goes through :func:`lint_source`, so all of them agree on lines and columns.
The prefilter (:mod:`dtype_lint.core.prefilter`) usually hands LibCST only the parts of a
file that can hold a finding; positions are mapped back to the file's own lines.

LibCST and the rules are imported on first use: a run answered from the cache never
needs them, and importing LibCST alone takes about a quarter of a second.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import re
import tokenize
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

from dtype_lint.core import prefilter_switch
from dtype_lint.core.confidence import rank, shown
from dtype_lint.core.finding import Edit, FileError, Finding, Fix
from dtype_lint.core.guards import check_depth
from dtype_lint.core.imports import import_edit
from dtype_lint.core.lines import NEWLINE
from dtype_lint.core.options import Options
from dtype_lint.core.suppression import Suppressions, file_is_exempt

if TYPE_CHECKING:
    import ast

    import libcst as cst
    from libcst.metadata import CodeRange

    from dtype_lint.core.model.project import FileView
    from dtype_lint.core.rule import Report, Rule, Selection


class LintError(Exception):
    """A file that cannot be linted; the message is the one-line reason, ``line`` and
    ``column`` where in the file it is (a syntax error), if anywhere."""

    def __init__(self, reason: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(reason)
        self.line, self.column = line, column

    def at(self, path: str) -> FileError:
        return FileError(path, str(self), self.line, self.column)


# LibCST words its errors "parser error: error at L:C: expected ...", L:C being the
# token after the error; the position is reported apart, so only the words are kept.
_LIBCST_PREFIX = re.compile(r"^(parser error: )?(error at \d+:\d+: )?")


@dataclasses.dataclass(frozen=True)
class Source:
    """A decoded file and how to write it back the same way."""

    text: str
    encoding: str

    @classmethod
    def from_bytes(cls, data: bytes) -> "Source":
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
            text = data.decode(encoding)
        except (SyntaxError, LookupError, UnicodeDecodeError) as exc:
            raise LintError(f"cannot decode: {exc}") from None
        if "\x00" in text:
            raise LintError("source contains a NUL byte")
        return cls(text, encoding)

    def encode(self, text: str) -> bytes:
        return text.encode(self.encoding)


def applicable_rules(source: str, rules: Sequence[type[Rule]], options: Options) -> list[type[Rule]]:
    """The rules that could find something in a file that is not cut into units: those
    whose prefilter keeps the whole text (or that declare none)."""
    out = []
    for rule in rules:
        declared = rule.prefilter(options)
        if declared is None or declared.keeps(source, True, None):
            out.append(rule)
    return out


def parse(text: str) -> cst.Module:
    import libcst as cst

    try:
        reason = check_depth(text)
    except SyntaxError as exc:
        raise _syntax_error(exc) from None
    if reason is not None:
        raise LintError(reason)
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        raise _syntax_error(_cpython_syntax_error(text) or exc) from None
    except RecursionError:
        raise LintError("too deeply nested to parse") from None


def _cpython_syntax_error(text: str) -> SyntaxError | None:
    """CPython's error for a text LibCST rejects: its position is the error's own (as
    ruff's and editors' are), where LibCST's is the next token's."""
    import ast
    import warnings

    try:
        with warnings.catch_warnings():  # the file's own SyntaxWarnings are not ours to print
            warnings.simplefilter("ignore")
            compile(text, "<dtype-lint>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        return exc if exc.lineno else None
    except (ValueError, RecursionError, MemoryError):
        return None
    return None  # syntax CPython accepts and LibCST does not know yet


def _syntax_error(exc: SyntaxError | cst.ParserSyntaxError) -> LintError:
    if isinstance(exc, SyntaxError):
        return LintError(f"syntax error: {exc.msg}", exc.lineno, exc.offset or 1)
    return LintError(f"syntax error: {_LIBCST_PREFIX.sub('', exc.message)}", exc.raw_line, exc.raw_column + 1)


def lint_source(
    text: str, path: str, rules: Sequence[type[Rule]] | Selection, options: Options,
    use_prefilter: bool | None = None, tree: ast.Module | None = None, view: FileView | None = None,
    on_tree: Callable[[ast.Module], None] | None = None,
) -> list[Finding]:
    """All findings of ``rules`` in ``text``, sorted, with suppressions applied.

    ``rules`` are rule classes or a :class:`~dtype_lint.core.rule.Selection` of codes,
    whose rules are imported on the first file that is not exempt. LibCST is imported only once a file may hold a
    finding (the rules take it from :mod:`dtype_lint.core.deferred`), so a run over
    clean files never pays for it. ``use_prefilter`` (default: on unless ``DTYPE_LINT_PREFILTER=0``) only
    changes how much is parsed, never the findings; off, every rule runs on the whole
    file. ``tree`` is the text's ``ast`` where the caller has parsed it already (flake8),
    which spares the prefilter its own parse. ``view``: the project model as this file
    sees it (what its imports name in other files); by default the process's model with
    no source roots, the running interpreter's packages. ``on_tree``: called with the
    file's ``ast`` where the prefilter parsed it (the project model learns the file's
    summary from it).
    """
    if file_is_exempt(text) or not _any(rules):
        return []
    if view is None:
        view = default_view(path)
    if use_prefilter is None:
        use_prefilter = prefilter_switch.enabled()
    # A rule whose findings are all below min-confidence (the audit mode's rules) is not run.
    classes = [rule for rule in rule_classes(rules) if shown(rule.highest, options.min_confidence)]
    if not use_prefilter:
        return _lint_module(parse(text), text, path, classes, options, None, text, view=view)
    from dtype_lint.core import prefilter

    reduced = prefilter.reduce_source(text, classes, options, tree, view=view)
    if on_tree is not None and reduced is not None and reduced.tree is not None:
        on_tree(reduced.tree)
    if reduced is None:
        selected = applicable_rules(text, classes, options)
        # With no rule to run, LibCST parses only a file CPython rejects, to report it.
        if selected or not prefilter.compiles(text):
            return _lint_module(parse(text), text, path, selected, options, None, text, view=view)
        return []
    if not reduced.text:
        return []
    selected = [rule for rule in classes if rule.doc.code in reduced.codes]
    try:
        module = parse(reduced.text)
    except LintError:
        # LibCST rejects something ast accepted: let the whole file decide (and word
        # the error against the file's own lines).
        return _lint_module(parse(text), text, path, classes, options, None, text, view=view)
    return _lint_module(module, text, path, selected, options, reduced.lines, reduced.text, reduced.tree, view)


def default_view(path: str) -> FileView:
    """The file as the process's default project model sees it."""
    from dtype_lint.core.model.project import project_model

    return project_model().view(path)


def lint_units(text: str, path: str, rules: Sequence[type[Rule]] | Selection, options: Options,
               starts: frozenset[int], tree: ast.Module, view: FileView | None = None) -> list[Finding] | None:
    """The findings of the top-level units of ``text`` starting on the lines ``starts``,
    as :func:`lint_source` finds them (other units are parsed only where those need
    them, and their findings may be missing or not); None where the prefilter cannot cut
    the file (then only a whole lint will do). ``tree``: the text's ``ast``."""
    from dtype_lint.core import prefilter

    if file_is_exempt(text) or not _any(rules) or not prefilter_switch.enabled():
        return None
    classes = rule_classes(rules)
    view = view or default_view(path)
    reduced = prefilter.reduce_source(text, classes, options, tree, starts, view)
    if reduced is None:
        return None
    if not reduced.text:
        return []
    try:
        module = parse(reduced.text)
    except LintError:
        return None
    selected = [rule for rule in classes if rule.doc.code in reduced.codes]
    return _lint_module(module, text, path, selected, options, reduced.lines, reduced.text, reduced.tree, view)


def rule_classes(rules: Sequence[type[Rule]] | Selection) -> list[type[Rule]]:
    """The rule classes of a selection (loading them), or the classes given."""
    load = getattr(rules, "load", None)
    return list(load() if load is not None else rules)  # type: ignore[arg-type]


def _any(rules: Sequence[type[Rule]] | Selection) -> bool:
    codes = getattr(rules, "codes", None)
    return bool(codes if codes is not None else rules)


def _lint_module(
    module: cst.Module, text: str, path: str, selected: Sequence[type[Rule]], options: Options,
    line_map: Sequence[int] | None, parsed_text: str, tree: ast.Module | None = None,
    view: FileView | None = None,
) -> list[Finding]:
    """Run the rules over ``module`` (parsed from ``parsed_text``: the file, or the
    prefilter's reduction of it, whose lines ``line_map`` maps back); ``tree`` is the
    whole file's ``ast`` where the prefilter parsed it."""
    from dtype_lint.core.context import FileContext
    from dtype_lint.core.traversal import walk

    reports: list[Report] = []
    statement_of: list[int] = []  # per report, the index of the top-level statement holding it
    ctx = FileContext(module, options.module_bases, view)
    ctx.source, ctx.path, ctx.tree = text, path, tree  # the whole file, whatever the prefilter kept
    visitors = [finder for rule in selected for finder in rule(ctx, options, reports).finders]
    try:
        for index, _ in enumerate(walk(module.body, visitors, (ctx.ENTER_TYPES, ctx.enter), (ctx.LEAVE_TYPES, ctx.leave))):
            statement_of.extend([index] * (len(reports) - len(statement_of)))
    except RecursionError:
        raise LintError("too deeply nested to lint") from None
    finally:
        ctx.release()
    kept = [i for i, report in enumerate(reports) if shown(report.confidence, options.min_confidence)]
    if not kept:
        return []
    return _to_findings(module, text, path, [reports[i] for i in kept], [statement_of[i] for i in kept],
                        line_map, parsed_text, tree)


def _positions(
    module: cst.Module, parsed_text: str, wanted: dict[int, list[cst.CSTNode]]
) -> Callable[[cst.CSTNode], CodeRange]:
    """Where the ``wanted`` nodes (by index of the top-level statement holding them) lie
    in ``parsed_text``.

    LibCST finds positions by generating the code of the whole module, which costs about
    a parse; here only what holds a finding is generated (the statement, or for classes
    and functions, at any depth, their header and the members that do; see ``_reduce``),
    each shifted to the line CPython's ``ast`` gives it.
    Falls back to the whole module wherever the two parsers do not line up (``\r`` line
    ends, where their line counts may differ)."""
    from libcst.metadata import CodePosition, CodeRange

    @functools.lru_cache(maxsize=1)
    def whole() -> Callable[[cst.CSTNode], CodeRange]:
        return _resolve_positions(module).__getitem__

    starts = None if "\r" in parsed_text else _statement_lines(module, parsed_text)
    if starts is None:
        return whole()
    found: dict[cst.CSTNode, CodeRange] = {}

    def place(statement: cst.BaseStatement, anchors: list[tuple]) -> list[cst.CSTNode]:
        """Record the anchored nodes' positions; return those the statement lacks."""
        positions = _resolve_positions(module.with_changes(header=(), body=(statement,), footer=()))
        missing = []
        for anchor, anchor_line, inside in anchors:
            shift = anchor_line - positions[anchor].start.line
            for node in inside:
                where = positions.get(node)
                if where is None:
                    missing.append(node)
                    continue
                found[node] = CodeRange(CodePosition(where.start.line + shift, where.start.column),
                                        CodePosition(where.end.line + shift, where.end.column))
        return missing

    for index, nodes in sorted(wanted.items()):
        statement = module.body[index]
        line, tree = starts[index]
        missing = place(*_reduce(statement, tree, line, nodes))
        if missing:  # whitespace of a member left out, or the statement node itself
            place(statement, [(statement, line, missing)])
    return lambda node: found[node] if node in found else whole()(node)


def _reduce(statement: cst.CSTNode, tree: ast.stmt, line: int, nodes: Sequence[cst.CSTNode]) -> tuple:
    """The statement with only the body members that hold ``nodes`` (at any depth of
    classes and functions), and (anchor, its first line, the nodes placed from it)
    triples: each kept member is an anchor, the statement itself anchors the rest (its
    header: decorators, bases, parameters). Code is then generated only for those."""
    import ast

    import libcst as cst

    from dtype_lint.core.traversal import descendants

    splittable = (isinstance(statement, (cst.ClassDef, cst.FunctionDef)) and isinstance(statement.body, cst.IndentedBlock)
                  and isinstance(tree, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)))
    lines = _aligned(statement.body.body, tree.body) if splittable else None  # type: ignore[union-attr]
    if lines is None:
        return statement, [(statement, line, list(nodes))]
    left = set(nodes)
    kept: list[cst.CSTNode] = []
    anchors: list[tuple] = []
    for member, (member_line, member_tree) in zip(statement.body.body, lines):  # type: ignore[union-attr]
        inside = left.intersection(descendants(member)) if left else set()
        if inside:
            reduced, member_anchors = _reduce(member, member_tree, member_line, list(inside))
            kept.append(reduced)
            anchors += member_anchors
            left -= inside
    body = statement.body.with_changes(body=tuple(kept) or statement.body.body[:1])  # type: ignore[union-attr]
    reduced_statement = statement.with_changes(body=body)
    anchors.append((reduced_statement, line, [n for n in nodes if n in left]))
    return reduced_statement, anchors


def _resolve_positions(module: cst.Module) -> Mapping[cst.CSTNode, CodeRange]:
    """PositionProvider's positions of every node of ``module``.

    ``MetadataWrapper.resolve`` also runs a batched visit of the whole tree for batchable
    providers, even when there are none, which costs as much again as the code
    generation that finds the positions; the provider is asked directly, through the
    wrapper's public resolve only if that ever stops working."""
    from libcst.metadata import MetadataWrapper, PositionProvider

    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    try:
        return PositionProvider()._gen(wrapper)
    except (AttributeError, TypeError):
        return wrapper.resolve(PositionProvider)


def _statement_lines(module: cst.Module, parsed_text: str) -> list[tuple[int, ast.stmt]] | None:
    """The first line of each of the module's top-level statements, with the matching
    ``ast`` statement, from CPython's ast; None if the two do not line up."""
    import ast
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # CPython's SyntaxWarnings are not ours to print
            body = ast.parse(parsed_text).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return _aligned(module.body, body)


def _aligned(statements: Sequence[cst.CSTNode], body: list[ast.stmt]) -> list[tuple[int, ast.stmt]] | None:
    """(first line, ast statement) for each LibCST statement of a body; a line of
    several simple statements is one LibCST statement and several ast ones."""
    import libcst as cst

    out: list[tuple[int, ast.stmt]] = []
    position = 0
    for statement in statements:
        if position >= len(body):
            return None
        out.append((body[position].lineno, body[position]))
        position += len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
    return out if position == len(body) else None


def _to_findings(
    module: cst.Module, text: str, path: str, reports: list[Report], statement_of: list[int],
    line_map: Sequence[int] | None, parsed_text: str, tree: ast.Module | None = None,
) -> list[Finding]:
    wanted: dict[int, list[cst.CSTNode]] = {}
    for report, index in zip(reports, statement_of):
        wanted.setdefault(index, []).append(report.node)
        wanted[index].extend(old for old, _ in report.replace)
    positions = _positions(module, parsed_text, wanted)
    lines = NEWLINE.split(text)

    def line_of(reduced_line: int) -> int:
        return line_map[reduced_line - 1] if line_map is not None else reduced_line

    suppressions = Suppressions(text, lines)
    import_edits = functools.lru_cache(maxsize=None)(functools.partial(import_edit, text, tree=tree))
    findings: dict[Finding, Finding] = {}  # one per place and code: the surest one
    for report in reports:
        where = positions(report.node)
        start, end = line_of(where.start.line), line_of(where.end.line)
        if suppressions.covers(start, report.code):
            continue
        fix = None
        if report.replace and report.applicability is not None:
            edits = []
            for old, new in report.replace:
                span = positions(old)
                edits.append(Edit(line_of(span.start.line), span.start.column + 1, line_of(span.end.line),
                                  span.end.column + 1, module.code_for_node(new)))
            # LibCST miscounts lines after a backslash continuation ended by \r\n; a fix
            # is kept only where the text each edit replaces is its node's own text.
            if all(_text_at(lines, edit) == NEWLINE.sub("\n", module.code_for_node(old))
                   for edit, (old, _) in zip(edits, report.replace)):
                # once per file and set of imports, on the file's head (core.imports)
                added = import_edits(report.imports) if report.imports else None
                fix = Fix(report.applicability, tuple(edits) + ((added,) if added else ()))
        found = Finding(path, start, where.start.column + 1, end, where.end.column + 1,
                        report.code, report.name, report.message, fix, flow=report.flow,
                        confidence=report.confidence, basis=report.basis)
        if found not in findings or rank(found.confidence) > rank(findings[found].confidence):
            findings.pop(found, None)
            findings[found] = found
    return sorted(findings)


def _text_at(lines: list[str], edit: Edit) -> str | None:
    """The original text an edit would replace (lines joined by \n), or None if out of range."""
    if not 0 < edit.line <= edit.end_line <= len(lines):
        return None
    if edit.line == edit.end_line:
        return lines[edit.line - 1][edit.column - 1 : edit.end_column - 1]
    middle = lines[edit.line : edit.end_line - 1]
    return "\n".join([lines[edit.line - 1][edit.column - 1 :], *middle, lines[edit.end_line - 1][: edit.end_column - 1]])
