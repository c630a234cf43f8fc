"""The result types every front-end consumes: findings, fixes, text edits, and the map
from a notebook's lines (its code cells linted as one module) back to its cells."""

from __future__ import annotations

import bisect
import dataclasses


@dataclasses.dataclass(frozen=True)
class CellMap:
    """Where each code cell of a notebook starts in the module its cells are linted as.

    ``cells[i]`` is the cell's 1-based number in the notebook (markdown cells count, so
    "cell 3" is the third cell from the top); ``starts[i]`` the module line of its first
    line.
    """

    cells: tuple[int, ...]
    starts: tuple[int, ...]

    def locate(self, line: int) -> tuple[int, int]:
        """``(cell number, line within the cell)`` of a module line."""
        index = max(0, bisect.bisect_right(self.starts, line) - 1)
        return self.cells[index], line - self.starts[index] + 1


@dataclasses.dataclass(frozen=True, order=True)
class Edit:
    """Replace the text between two 1-based (line, column) positions; end is exclusive."""

    line: int
    column: int
    end_line: int
    end_column: int
    content: str

    def as_json(self, cells: CellMap | None = None) -> dict[str, object]:
        if cells is None:
            return dataclasses.asdict(self)
        cell, line = cells.locate(self.line)
        end_cell, end_line = cells.locate(self.end_line)
        return {"cell": cell, "line": line, "column": self.column, "end_cell": end_cell, "end_line": end_line,
                "end_column": self.end_column, "content": self.content}


@dataclasses.dataclass(frozen=True)
class Fix:
    applicability: str  # "safe" or "unsafe"
    edits: tuple[Edit, ...]

    def as_json(self, cells: CellMap | None = None) -> dict[str, object]:
        return {"applicability": self.applicability, "edits": [e.as_json(cells) for e in self.edits]}


@dataclasses.dataclass(frozen=True, order=True)
class Step:
    """One place on the path of a finding whose evidence is elsewhere: the constructor
    (maybe in another file) that stores the callable, the helper that casts the model,
    the base class that makes a class a module. ``message`` says what happens there.
    The finding's own position is the path's last place and is not repeated."""

    path: str
    line: int
    column: int
    message: str

    def location(self) -> str:
        return f"{self.path}:{self.line}:{self.column}"

    def as_json(self) -> dict[str, object]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True, order=True)
class Finding:
    """One hazard at a 1-based line and column (columns count characters, not bytes).

    In a notebook, lines are those of the module its code cells are linted as, and
    ``cells`` maps them to cells for display (:meth:`position`).
    """

    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    code: str
    name: str = dataclasses.field(compare=False)
    message: str = dataclasses.field(compare=False)
    fix: Fix | None = dataclasses.field(default=None, compare=False)
    cells: CellMap | None = dataclasses.field(default=None, compare=False, repr=False)
    # Where the evidence is, in order, when it is not all at the finding's own line.
    flow: tuple[Step, ...] = dataclasses.field(default=(), compare=False)
    # How sure it is (core.confidence), and what keeps it below high, if anything.
    confidence: str = dataclasses.field(default="high", compare=False)
    basis: str = dataclasses.field(default="", compare=False)

    def position(self) -> tuple[int | None, int, int]:
        """``(cell, line, end line)`` as a user reads them: the cell number (``None``
        outside notebooks) and lines within that cell."""
        if self.cells is None:
            return None, self.line, self.end_line
        cell, line = self.cells.locate(self.line)
        return cell, line, self.cells.locate(self.end_line)[1]  # no statement spans two cells

    def location(self) -> str:
        """``LINE:COL``, or ``cell N:LINE:COL`` in a notebook (ruff's form)."""
        cell, line, _ = self.position()
        return f"{line}:{self.column}" if cell is None else f"cell {cell}:{line}:{self.column}"

    def as_json(self) -> dict[str, object]:
        cell, line, end_line = self.position()
        out: dict[str, object] = {"path": self.path}
        if cell is not None:
            out["cell"] = cell
        out.update({
            "line": line,
            "column": self.column,
            "end_line": end_line,
            "end_column": self.end_column,
            "code": self.code,
            "name": self.name,
            "message": self.message,
            "confidence": self.confidence,
            "basis": self.basis,
            "fix": self.fix.as_json(self.cells) if self.fix else None,
        })
        if self.flow:
            out["flow"] = [step.as_json() for step in self.flow]
        return out


@dataclasses.dataclass(frozen=True)
class FileError:
    """A file that could not be linted, with the reason in one line and, for a syntax
    error, where it is (1-based, as findings are placed; in a notebook, ``cell`` and the
    line within it: the cell is left out and the rest of the notebook is linted)."""

    path: str
    reason: str
    line: int | None = None
    column: int | None = None
    cell: int | None = None

    def location(self) -> str:
        """``PATH``, ``PATH:LINE:COL`` or, in a notebook, ``PATH:cell N:LINE:COL``."""
        where = self.path if self.cell is None else f"{self.path}:cell {self.cell}"
        return where if self.line is None else f"{where}:{self.line}:{self.column}"
