"""Lint one open document: its text as the editor holds it, with the configuration found
for its path.

An unsaved buffer is linted from its text, never from the file on disk. The result of
the last text of each document is kept, so the same text is not linted again, and a
change is linted from it where :mod:`dtype_lint.core.incremental` can (an edit inside
one function's body, comment lines), with the findings a whole lint gives. A document that cannot be linted (a syntax
error while typing, a configuration error, a bug of ours) yields no findings and the
reason; the next text is linted afresh (and the configuration read again once its file
changes).
"""

from __future__ import annotations

import dataclasses
import os
import traceback
from pathlib import Path

from dtype_lint.core.engine import LintError, lint_source
from dtype_lint.core.incremental import relint, tree_of
from dtype_lint.core.finding import Finding
from dtype_lint.project.config import Config, ConfigError, find_pyproject, load_config


@dataclasses.dataclass(frozen=True)
class Outcome:
    """The findings of one text, or why there are none."""

    text: str
    findings: tuple[Finding, ...] = ()
    problem: str | None = None  # why the text was not linted (a syntax error while typing)
    config_problem: str | None = None  # the configuration found cannot be used: the CLI's line for it
    internal_error: str | None = None  # a traceback: a bug of ours
    warning: str | None = None  # linted, but without something configured (the environment's packages)
    config: Config | None = None  # the configuration the findings are for
    # The other files the lint consulted (core.model): saving one of them lints again.
    consulted: frozenset[str] = frozenset()


class Linter:
    """Lints documents by path and text, keeping the last outcome of each document."""

    def __init__(self) -> None:
        self._configs: dict[str, tuple[tuple[int, int], Config]] = {}  # by file: (mtime, size), config
        self._last: dict[str, Outcome] = {}
        self._default = load_config(None)  # one object: a change is linted incrementally only under the same one

    def lint(self, key: str, path: str, text: str) -> Outcome:
        """The outcome for ``text`` of the document ``key`` (its URI) at ``path``."""
        last = self._last.get(key)
        if last is not None and last.text == text:
            return last
        outcome = self._lint(path, text, last)
        self._last[key] = outcome
        return outcome

    def forget(self, key: str) -> None:
        self._last.pop(key, None)

    def dependents(self, path: str) -> list[str]:
        """The documents whose last lint consulted the file at ``path`` (a module base or
        a helper defined there), forgotten so that their next lint reads it again."""
        saved = os.path.abspath(path)
        keys = [key for key, outcome in list(self._last.items()) if saved in outcome.consulted]
        for key in keys:
            self._last.pop(key, None)
        return keys

    def _lint(self, path: str, text: str, last: Outcome | None) -> Outcome:
        try:
            config = self.config_for(path)
            codes = config.selected(path)
            view = config.view(path)
            view.model.new_epoch()  # files may have been saved since the last lint
            consulted = view.model.record()
            findings = None
            if last is not None and last.config is config and last.problem is None and last.internal_error is None:
                findings = relint(last.text, last.findings, text, path, codes, config.options, view)
            if findings is None:  # the tree relint parsed spares the prefilter its own parse
                findings = lint_source(text, path, codes, config.options, tree=tree_of(text), view=view)
        except LintError as exc:
            return Outcome(text, problem=str(exc))
        except ConfigError as exc:
            return Outcome(text, problem="configuration error", config_problem=exc.text)
        except Exception:  # a bug of ours must cost this text its findings, not the server
            return Outcome(text, internal_error=traceback.format_exc())
        return Outcome(text, tuple(findings), config=config, consulted=frozenset(consulted) - {os.path.abspath(path)},
                       warning=config.environment_problem())

    def config_for(self, path: str) -> Config:
        """The configuration found by walking up from ``path`` (read again once it changes)."""
        found = find_pyproject([path if os.path.isabs(path) else os.path.join(os.getcwd(), path)])
        if found is None:
            return self._default
        try:
            st = os.stat(found)
        except OSError:
            return self._default
        stamp = (st.st_mtime_ns, st.st_size)
        cached = self._configs.get(str(found))
        if cached is None or cached[0] != stamp:
            cached = self._configs[str(found)] = (stamp, load_config(Path(found)))
        return cached[1]
