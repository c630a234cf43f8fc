"""The engine's findings for one file, as the mypy plugin reports them.

Shared by the plugin (in mypy's process) and its lint worker (:mod:`.worker`); imports
neither mypy nor, until a file needs parsing, LibCST. A finding travels as a
:class:`Reported`, a named tuple that sorts as the engine's findings of one file do and
crosses the worker's pipe as a JSON list (no dataclass in mypy's process), its flow's
steps as ``(path, line, column, message)``.
"""

from __future__ import annotations

import functools
import os
from typing import NamedTuple

Place = tuple[str, int, int, str]  # a step of a finding's flow: path, line, column, message


class Reported(NamedTuple):
    """One finding as the plugin reports it: 1-based line, 1-based character column."""

    line: int
    column: int
    end_line: int
    end_column: int
    code: str
    message: str
    flow: tuple[Place, ...] = ()

    @classmethod
    def from_json(cls, row: list) -> Reported:
        """The finding the worker sent (JSON turned the flow's tuples into lists)."""
        *fields, flow = row
        return cls(*fields, tuple((path, line, column, message) for path, line, column, message in flow))


# The LibCST rule's DTL303 reasons that come from cast helpers, which stay the engine's:
# every other DTL303 (a cast-method call) is the plugin's type-aware hook's.
HELPER_REASON = "() casts it whole)"


@functools.lru_cache(maxsize=64)
def config_for(folder: str):  # -> dtype_lint.project.config.Config
    """The configuration found from ``folder``; ConfigError where it cannot be used (the
    plugin stops mypy with it before any file of that folder is linted)."""
    from dtype_lint.project.config import find_pyproject, load_config

    return load_config(find_pyproject([folder]))


def config_of(path: str):  # -> dtype_lint.project.config.Config
    return config_for(os.path.dirname(os.path.abspath(path)))


def read(path: str) -> str | None:
    from dtype_lint.core.engine import LintError, Source

    try:
        with open(path, "rb") as handle:
            return Source.from_bytes(handle.read()).text
    except (OSError, LintError):
        return None


def engine_findings(path: str, text: str) -> list[Reported]:
    """The shared engine's findings that the plugin reports (syntax errors are mypy's)."""
    from dtype_lint.core.engine import LintError, lint_source

    config = config_of(path)
    codes = config.selected(path)
    view = config.view(path)
    view.model.new_epoch()  # a daemon's worker lives across runs: files may have changed
    try:
        linted = lint_source(text, path, codes, config.options, view=view)
    except LintError:
        return []
    return [Reported(f.line, f.column, f.end_line, f.end_column, f.code, f.message,
                     tuple((s.path, s.line, s.column, s.message) for s in f.flow)) for f in linted
            if f.code != "DTL303" or HELPER_REASON in f.message]
