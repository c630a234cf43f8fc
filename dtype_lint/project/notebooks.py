"""Jupyter notebooks as one module: read with nbformat, lint as they run, write back.

A notebook's code cells run top to bottom in one namespace, so they are linted as one
module: a name defined in cell 2 is known in cell 4, and a hazard may span two cells.
The module is the cells' sources joined by a separator line (``CELL_SEPARATOR``);
:class:`~dtype_lint.core.finding.CellMap` maps its lines back to cells for display.

IPython syntax is not Python: line magics, shell escapes and help (``%matplotlib inline``,
``!nvidia-smi``, ``files = !ls``, ``model?``) are each replaced by a stand-in line of
the same indentation that parses (``pass``, ``files = ...``) and carries a marker, so no
other line moves; ``%%time``-style cell magics whose body is Python lose only their
first line, and cells of other cell magics (``%%bash``, ``%%html``) are not linted.
A cell that still does not parse is reported on its own and left out; the rest is linted.

:meth:`NotebookSource.encode` turns an edited module (fixes, ``# noqa`` comments) back
into the notebook: it splits it at the separators, puts the original magic lines back,
and changes only the edited cells' sources in the file's own JSON, written with its
indentation, key order and final newline (nbformat's writer would re-indent and re-sort
it), so outputs, execution counts, ids and metadata are kept and the diff is those
lines alone. nbformat validates what is written.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import json
import re
import warnings
from typing import Any

from dtype_lint.core.engine import LintError
from dtype_lint.core.finding import CellMap, FileError

NOTEBOOK_SUFFIX = ".ipynb"
CELL_SEPARATOR = "# %% dtype-lint: cell separator"
# Cell magics whose body is Python that runs in the notebook's namespace.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})
_MARKER = "  # dtype-lint: ipython line "
_MARKED = re.compile(re.escape(_MARKER) + r"(\d+)$")
_ASSIGNED_MAGIC = re.compile(r"^(\s*)([A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*)\s*=\s*[%!]")
_LINE = re.compile(r"[^\n]*\n|[^\n]+$")  # a source's lines as Jupyter stores them, "\n" kept
_FLAGS = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT  # IPython runs top-level await


def is_notebook(path: str) -> bool:
    return path.endswith(NOTEBOOK_SUFFIX)


@dataclasses.dataclass(frozen=True)
class _Cell:
    index: int  # in the notebook's cell list
    source: str  # as the notebook holds it
    linted: bool  # False: not Python (a %%bash cell) or does not parse; kept as it is


@dataclasses.dataclass(frozen=True)
class NotebookSource:
    """A notebook's code cells as one module (``text``), and how to write it back."""

    text: str
    cells: CellMap
    problems: tuple[tuple[int, int, int, str], ...]  # (cell, line, column, reason) of cells left out
    raw: Any  # the file's JSON as read (key order kept), never modified
    code_cells: tuple[_Cell, ...]
    magic_lines: tuple[str, ...]  # original lines behind the stand-ins, by marker number
    indent: int | None
    final_newline: bool
    encoding: str = "utf-8"

    def errors(self, path: str) -> list[FileError]:
        return [FileError(path, reason, line=line, column=column, cell=cell)
                for cell, line, column, reason in self.problems]

    def changed_cells(self, text: str) -> list[tuple[int, str, str]]:
        """``(cell number, source, new source)`` of each code cell that ``text`` (this
        module after edits) changes; LintError for an edit no cell can hold."""
        parts = text.split(f"\n{CELL_SEPARATOR}\n")
        if len(parts) != len(self.code_cells):
            raise LintError("an edit crossed a notebook cell boundary; nothing written")
        changed = []
        for cell, part in zip(self.code_cells, parts):
            if not cell.linted and part:  # an edit (an added import) landed in a cell left out
                raise LintError("an edit would go into a cell that was not linted; nothing written")
            source = _unmask(part, self.magic_lines)
            if cell.linted and source != cell.source:
                changed.append((cell.index + 1, cell.source, source))
        return changed

    def encode(self, text: str) -> bytes:
        """The notebook's bytes with ``text`` (this module after edits) as its code."""
        import nbformat

        raw = copy.deepcopy(self.raw)
        for number, _, source in self.changed_cells(text):
            stored = raw["cells"][number - 1]
            # Jupyter stores a source as its lines, each with its line end; keep the file's form.
            stored["source"] = _LINE.findall(source) if isinstance(stored["source"], list) else source
        out = json.dumps(raw, indent=self.indent, ensure_ascii=False, separators=(",", ": ") if self.indent else None)
        out += "\n" if self.final_newline else ""
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                nbformat.validate(nbformat.reads(out, as_version=nbformat.NO_CONVERT))
        except nbformat.ValidationError as exc:
            raise LintError(f"the edited notebook would not be valid ({exc.message}); nothing written") from None
        return out.encode(self.encoding)



def read_notebook(data: bytes) -> NotebookSource:
    """The notebook in ``data`` as one module; LintError if it is not a notebook."""
    import nbformat

    try:
        document = data.decode("utf-8-sig")
        # Parsed once, and read as nbformat's reader reads it but without its schema
        # validation, which costs several times the parse: a notebook that breaks the
        # schema is still code to lint. What is written back is validated (encode).
        raw = json.loads(document)
        major, _ = nbformat.reader.get_version(raw)
    except (UnicodeDecodeError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise LintError(f"not a readable notebook: {exc}") from None
    if major != 4 or not isinstance(raw.get("cells"), list):
        raise LintError(f"not a readable notebook: nbformat {major} has no list of cells (version 4 is read)")
    cells = [(index, cell.get("source", "")) for index, cell in enumerate(raw["cells"])
             if isinstance(cell, dict) and cell.get("cell_type") == "code"]
    sources = [(index, "".join(source) if isinstance(source, list) else str(source)) for index, source in cells]
    module = cells_as_module([(index + 1, source) for index, source in sources])
    return NotebookSource(
        text=module.text,
        cells=module.cells,
        problems=module.problems,
        raw=raw,
        code_cells=tuple(_Cell(index, source, linted) for (index, source), linted in zip(sources, module.linted)),
        magic_lines=module.magic_lines,
        indent=_json_indent(document),
        final_newline=document.endswith("\n"),
    )


@dataclasses.dataclass(frozen=True)
class CellModule:
    """Code cells as one module: its text, where each cell starts, the cells left out
    (``linted`` False) and why where they do not parse, and the IPython lines behind the
    stand-ins (by marker number)."""

    text: str
    cells: CellMap
    problems: tuple[tuple[int, int, int, str], ...]  # (cell, line, column, reason)
    linted: tuple[bool, ...]
    magic_lines: tuple[str, ...]



def cells_as_module(cells: list[tuple[int, str]]) -> CellModule:
    """``(cell number, source)`` of code cells, in order, as one module (the CLI reads
    them from the file, the language server from the editor's cell documents)."""
    magic_lines: list[str] = []
    segments: list[str] = []
    linted: list[bool] = []
    starts: list[int] = []
    problems: list[tuple[int, int, int, str]] = []
    line = 1
    for number, source in cells:
        text, problem = _as_python(source, magic_lines)
        if problem is not None:
            problems.append((number, *problem))
        linted.append(text is not None)
        starts.append(line)
        segments.append(text or "")
        line += (text or "").count("\n") + 2  # the cell's lines, then the separator line
    return CellModule(f"\n{CELL_SEPARATOR}\n".join(segments), CellMap(tuple(n for n, _ in cells), tuple(starts)),
                      tuple(problems), tuple(linted), tuple(magic_lines))


def _unmask(text: str, magic_lines: tuple[str, ...]) -> str:
    """One cell's part of the module with its IPython lines put back."""
    if _MARKER not in text:
        return text
    return "\n".join(magic_lines[int(m.group(1))] if (m := _MARKED.search(line)) else line
                     for line in text.split("\n"))


def _as_python(source: str, magic_lines: list[str]) -> tuple[str | None, tuple[int, int, str] | None]:
    """``(python text, None)``, ``(None, None)`` for a cell that is not Python, or
    ``(None, (line, column, reason))`` for one that does not parse."""
    lines = source.split("\n")
    first = next((i for i, text in enumerate(lines) if text.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        name = lines[first].lstrip()[2:].split(maxsplit=1)
        if not name or name[0] not in PYTHON_CELL_MAGICS:
            return None, None
        lines[first] = _stand_in(lines[first], magic_lines)
    text = "\n".join(lines)
    problem = _syntax_error(text)
    if problem is None:
        return text, None
    masked = "\n".join(_stand_in(line, magic_lines) if _is_ipython(line) else line for line in lines)
    problem = _syntax_error(masked)
    return (masked, None) if problem is None else (None, problem)


def _is_ipython(line: str) -> bool:
    stripped = line.strip()
    return (stripped.startswith(("%", "!", "?")) or (stripped.endswith("?") and not stripped.startswith("#"))
            or _ASSIGNED_MAGIC.match(line) is not None)


def _stand_in(line: str, magic_lines: list[str]) -> str:
    """A line of the same indentation that parses and binds what the magic line binds."""
    indent = line[: len(line) - len(line.lstrip())]
    assigned = _ASSIGNED_MAGIC.match(line)
    body = f"{assigned.group(2)} = ..." if assigned else "pass"
    magic_lines.append(line)
    return f"{indent}{body}{_MARKER}{len(magic_lines) - 1}"


def _syntax_error(text: str) -> tuple[int, int, str] | None:
    try:
        compile(text, "<cell>", "exec", _FLAGS, dont_inherit=True)
    except SyntaxError as exc:
        return exc.lineno or 1, exc.offset or 1, f"syntax error: {exc.msg}"
    except ValueError as exc:  # a NUL byte
        return 1, 1, f"cannot parse: {exc}"
    return None


def _json_indent(raw: str) -> int | None:
    """The indentation of the file's JSON (Jupyter writes 1), to write it back alike."""
    match = re.match(r"\{\s*\n( *)\"", raw)
    return None if match is None else len(match.group(1))
