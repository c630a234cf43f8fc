"""The result types every front-end consumes: findings, fixes and text edits."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True, order=True)
class Edit:
    """Replace the text between two 1-based (line, column) positions; end is exclusive."""

    line: int
    column: int
    end_line: int
    end_column: int
    content: str

    def as_json(self) -> dict[str, object]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Fix:
    applicability: str  # "safe" or "unsafe"
    edits: tuple[Edit, ...]

    def as_json(self) -> dict[str, object]:
        return {"applicability": self.applicability, "edits": [e.as_json() for e in self.edits]}


@dataclasses.dataclass(frozen=True, order=True)
class Finding:
    """One hazard at a 1-based line and column (columns count characters, not bytes)."""

    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    code: str
    name: str = dataclasses.field(compare=False)
    message: str = dataclasses.field(compare=False)
    fix: Fix | None = dataclasses.field(default=None, compare=False)

    def as_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "code": self.code,
            "name": self.name,
            "message": self.message,
            "fix": self.fix.as_json() if self.fix else None,
        }


@dataclasses.dataclass(frozen=True)
class FileError:
    """A file that could not be linted, with the reason in one line and, for a syntax
    error, where it is (1-based, as findings are placed)."""

    path: str
    reason: str
    line: int | None = None
    column: int | None = None
