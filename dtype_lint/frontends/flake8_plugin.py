"""The flake8 plugin: the same engine, reporting through flake8 under the `DTL` prefix.

flake8 applies its own `select`, `ignore`, `per-file-ignores` and `# noqa` on top; rule
options and the rule selection come from `[tool.dtype-lint]`, as for the CLI, and the
interpreter to ask for installed packages from ``$DTYPE_LINT_PYTHON``. flake8 has no
channel for a warning: an environment that cannot be read leaves installed packages
unknown, silently, as the CLI says aloud.

A `[tool.dtype-lint]` table that cannot be used fails the run at start-up, before any
file is checked: when flake8 hands its options to the plugins (``parse_options``), the
configuration of every folder that holds a file flake8 will check (found by flake8's own
file discovery) is read, and a broken one is printed with the CLI's words and ends
flake8 with exit code 2 (1 is flake8's for findings).

flake8 runs every installed plugin whatever `--select` says, so every flake8 user pays
for this one: it goes through the same prefilter as the CLI, which skips files that
cannot hold a finding and parses only the parts of the others that can, starting from
the ``ast`` flake8 has already built.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import os
import sys
from typing import Iterator

from dtype_lint import __version__
from dtype_lint.project.config import Config, ConfigError, find_pyproject, load_config
from dtype_lint.core.confidence import LEVELS
from dtype_lint.core.engine import LintError, lint_source


# flake8 exits 1 for findings and for a crash; a configuration error is told apart, as
# the CLI does (and as argparse does for a bad option).
EXIT_CONFIG_ERROR = 2


# Start-up reads the configuration of every folder with a file to check; the checks
# (in processes forked after it) find them here.
@functools.lru_cache(maxsize=4096)
def _config_for(folder: str) -> Config:
    return load_config(find_pyproject([folder]))


def _folder(filename: str) -> str:
    """Where the configuration of ``filename`` is looked for (stdin: the working folder)."""
    if filename in ("-", "stdin"):
        return "."
    path = os.path.abspath(filename)
    return path if os.path.isdir(path) else os.path.dirname(path)


class DtypeLintChecker:
    name = "dtype-lint"
    version = __version__
    # `--min-confidence` (flake8's command line or its config), over `[tool.dtype-lint]`'s.
    min_confidence: str | None = None

    @classmethod
    def add_options(cls, manager) -> None:
        manager.add_option("--min-confidence", choices=LEVELS, default=None, parse_from_config=True,
                           help="dtype-lint: hide findings below this confidence (low is the audit mode)")

    def __init__(self, tree: ast.AST, filename: str, lines: list[str]) -> None:
        self.tree = tree
        self.filename = filename
        self.lines = lines

    @staticmethod
    def parse_options(option_manager: object, options: argparse.Namespace, args: list[str]) -> None:
        """flake8's start-up: take `--min-confidence`, and refuse a broken configuration
        before checking anything."""
        from flake8.discover_files import expand_paths  # the files flake8 goes on to check

        DtypeLintChecker.min_confidence = options.min_confidence

        files = expand_paths(paths=options.filenames, stdin_display_name=options.stdin_display_name,
                             filename_patterns=options.filename, exclude=(*options.exclude, *options.extend_exclude))
        # A file read from stdin is checked under its display name.
        folders = {_folder(options.stdin_display_name if name == "-" else name) for name in files}
        for folder in sorted(folders):
            try:
                _config_for(folder)
            except ConfigError as exc:
                sys.stderr.write(exc.text + "\n")
                raise SystemExit(EXIT_CONFIG_ERROR) from None

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        config = _config_for(_folder(self.filename))
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
