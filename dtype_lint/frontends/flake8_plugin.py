"""The flake8 plugin: the same engine, reporting through flake8 under the `DTL` prefix.

flake8 applies its own `select`, `ignore`, `per-file-ignores` and `# noqa` on top; rule
options and the rule selection come from `[tool.dtype-lint]`, as for the CLI, and the
interpreter to ask for installed packages from ``$DTYPE_LINT_PYTHON``. flake8 has no
channel for a warning: an environment that cannot be read leaves installed packages
unknown, silently, as the CLI says aloud.

flake8 runs every installed plugin whatever `--select` says, so every flake8 user pays
for this one: it goes through the same prefilter as the CLI, which skips files that
cannot hold a finding and parses only the parts of the others that can, starting from
the ``ast`` flake8 has already built.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import os
from typing import Iterator

from dtype_lint import __version__
from dtype_lint.project.config import Config, ConfigError, find_pyproject, load_config
from dtype_lint.core.confidence import LEVELS
from dtype_lint.core.engine import LintError, lint_source


@functools.lru_cache(maxsize=64)
def _config_for(folder: str) -> Config:
    try:
        return load_config(find_pyproject([folder]))
    except ConfigError:
        # flake8 has no channel for a config error; the CLI reports it. Use defaults.
        return load_config(None)


class DtypeLintChecker:
    name = "dtype-lint"
    version = __version__
    # `--min-confidence` (flake8's command line or its config), over `[tool.dtype-lint]`'s.
    min_confidence: str | None = None

    @classmethod
    def add_options(cls, manager) -> None:
        manager.add_option("--min-confidence", choices=LEVELS, default=None, parse_from_config=True,
                           help="dtype-lint: hide findings below this confidence (low is the audit mode)")

    @classmethod
    def parse_options(cls, options) -> None:
        cls.min_confidence = options.min_confidence

    def __init__(self, tree: ast.AST, filename: str, lines: list[str]) -> None:
        self.tree = tree
        self.filename = filename
        self.lines = lines

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        folder = os.path.dirname(os.path.abspath(self.filename)) if self.filename not in ("-", "stdin") else "."
        config = _config_for(folder)
        if self.min_confidence is not None:
            config = dataclasses.replace(config, options=dataclasses.replace(
                config.options, min_confidence=self.min_confidence))
        codes = config.selected(self.filename)
        text = "".join(self.lines)
        try:
            # flake8 parsed "".join(lines) already: the prefilter reuses its tree.
            tree = self.tree if isinstance(self.tree, ast.Module) else None
            findings = lint_source(text, self.filename, codes, config.options, tree=tree, view=config.view(self.filename))
        except LintError:
            return  # flake8 reports syntax errors itself (E999)
        for f in findings:
            yield f.line, f.column - 1, f"{f.code} {f.message}", type(self)
