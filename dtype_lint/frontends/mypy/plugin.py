"""The mypy plugin: dtype hazards reported as mypy errors, with error codes ``DTL101``...

Enable it with ``plugins = ["dtype_lint.mypy_plugin"]`` (the public path, which loads this module) under ``[tool.mypy]``. Rule
selection and options come from ``[tool.dtype-lint]``, as for the CLI.

How it works (see the documentation site, "mypy plugin"):

* Method and function hooks run the checks that need types (DTL303 on receivers typed as
  ``torch.nn.Module``; DTL201/DTL202 through variables and attributes) and record what
  they find for the file being checked.
* ``get_additional_deps`` is called for every file mypy parses: a file of the user's
  (not from the cache, not installed) is handed to the lint worker
  (:mod:`dtype_lint.frontends.mypy.worker`), a process that runs the shared LibCST engine while
  mypy analyses the file, so that LibCST's import and the linting overlap mypy's work.
* ``get_additional_indirect_deps`` is called once for every file mypy type-checks, after
  its last hook and before its errors are flushed and written to the cache. There the
  worker's findings are collected (or, without a worker, the engine lints the file
  here), DTL101 is checked on Flax modules and dataclasses, and everything is reported
  into mypy's error list for that file. Cached files are not rechecked, and mypy
  replays their cached errors, plugin errors included. ``DTYPE_LINT_MYPY_WORKER=0``
  lints in mypy's own process instead.
* A finding whose evidence is elsewhere (its flow) is followed by one note per place,
  ``note: via PATH:LINE:COL: MESSAGE``, at the finding's own position and with its code,
  so that what silences the error (``# type: ignore[DTL204]``, a disabled code) silences
  its notes.
* ``report_config_data`` gives mypy, for each file of the user's, the dtype-lint
  version and the configuration that applies to it: mypy rechecks a file from its cache
  once either changes (an `ignore` added, a rule option edited).
* A broken ``[tool.dtype-lint]`` stops the run with exit code 2 (mypy's for a blocking
  error; 1 is for findings) and the CLI's ``dtype-lint: config error: ...`` line, before
  any file it applies to is checked: when mypy parses such a file
  (``get_additional_deps``) or reads it from its cache (``report_config_data``).
* Any other exception in the plugin becomes one note naming it, never a traceback.
  ``DTYPE_LINT_MYPY_TEST_CRASH=1`` in the environment makes every hook raise: a switch
  for the test of that, not for use.
"""

from __future__ import annotations

import functools
import gc
import os
import re
import sys
from typing import Callable

from mypy.checker_state import checker_state
from mypy.errorcodes import ErrorCode
from mypy.errors import CompileError, Errors
from mypy.nodes import MypyFile
from mypy.options import Options as MypyOptions
from mypy.plugin import FunctionContext, MethodContext, Plugin, ReportConfigContext
from mypy.types import Type
from mypy.util import decode_python_encoding

from dtype_lint import __version__
from dtype_lint.core.suppression import Suppressions, file_is_exempt
from dtype_lint.frontends.mypy import typeaware
from dtype_lint.frontends.mypy.lint import Reported, config_of, engine_findings
from dtype_lint.frontends.mypy.worker import LintWorker
from dtype_lint.rules.codes import rule_codes

# The configuration, the engine and the rules import LibCST (about half a second): they are
# imported when the first file of the user's is checked, never in a mypy run that only
# reads its cache.

# Lines as the engine counts them: LibCST ends lines at \n, \r\n or \r only.
_NEWLINE = re.compile(r"\r\n|\r|\n")
# One mypy error code per rule, spelled as the CLI code, so that
# `# type: ignore[DTL303]` and `--disable-error-code DTL303` name exactly one rule. mypy
# checks --disable-error-code against the codes registered when the plugin is loaded.
ERROR_CODES = {code: ErrorCode(code, name, "dtype-lint") for code, name in rule_codes().items()}


def _error_code(code: str) -> ErrorCode:
    if code not in ERROR_CODES:
        ERROR_CODES[code] = ErrorCode(code, code, "dtype-lint")
    return ERROR_CODES[code]


# Test hook: set, every hook of the plugin raises (tests/mypy checks the crash handling).
TEST_CRASH_VARIABLE = "DTYPE_LINT_MYPY_TEST_CRASH"
_METHOD_HOOKS = (typeaware.CAST_METHODS | typeaware.TYPE_CAST_METHODS | typeaware.POOL_METHODS
                 | typeaware.EXECUTOR_METHODS)


WORKER_VARIABLE = "DTYPE_LINT_MYPY_WORKER"  # "0": lint in mypy's own process


class DtypeLintPlugin(Plugin):
    def __init__(self, options: MypyOptions) -> None:
        super().__init__(options)
        # Hits of the type-aware hooks, by file path, until that file is finished.
        self._hits: dict[str, dict[tuple[int, int, str], str]] = {}
        self._local: dict[str, typeaware.LocalCallables] = {}
        self._errors: Errors | None = None
        self._crashed = False
        self._searched = False  # whether _find_errors ran (at most once per run)
        self._test_crash = bool(os.environ.get(TEST_CRASH_VARIABLE))
        self._worker = LintWorker() if _worker_pays() else None

    # -- hooks ---------------------------------------------------------------------

    def get_method_hook(self, fullname: str) -> Callable[[MethodContext], Type] | None:
        self._note_errors()
        method = fullname.rpartition(".")[2]
        if method in _METHOD_HOOKS:
            return functools.partial(self._method_call, method)
        if method == "Pool" and fullname.startswith("multiprocessing."):
            return self._context_pool
        return None

    def get_function_hook(self, fullname: str) -> Callable[[FunctionContext], Type] | None:
        self._note_errors()
        if fullname in typeaware.SINK_FUNCTIONS:
            return functools.partial(self._sink_function, fullname)
        if fullname == typeaware.DATALOADER:
            return self._dataloader
        return None

    def report_config_data(self, ctx: ReportConfigContext) -> list[str] | None:
        if ctx.path.endswith(".pyi") or not _users_path(ctx.path):
            return None
        try:
            return [__version__, _usable_config(ctx.path).fingerprint()]
        except CompileError:
            raise
        except Exception as exc:
            self._internal_error(ctx.path, exc)
            return None

    def get_additional_deps(self, file: MypyFile) -> list[tuple[int, str, int]]:
        try:
            if _users_source(file):
                _usable_config(file.path)
                if self._worker is not None:
                    self._worker.submit(file.path)
        except CompileError:
            raise
        except Exception as exc:
            self._internal_error(file.path, exc, file)
        return []

    def get_additional_indirect_deps(self, file: MypyFile) -> set[str]:
        try:
            self._maybe_test_crash()
            self._finish(file)
        except Exception as exc:
            self._internal_error(file.path, exc, file)
        return set()

    # -- type-aware checks -----------------------------------------------------------

    def _method_call(self, method: str, ctx: MethodContext) -> Type:
        try:
            path = self._checked_path(ctx)
            self._maybe_test_crash()
            if path is not None:
                if method in typeaware.CAST_METHODS or method in typeaware.TYPE_CAST_METHODS:
                    if self._enabled(path, "DTL303"):
                        self._record(path, [hit] if (hit := typeaware.module_recast(ctx, method)) else [])
                if (method in typeaware.POOL_METHODS or method in typeaware.EXECUTOR_METHODS) and \
                        typeaware.is_process_pool(ctx.type, method) and self._enabled(path, "DTL201"):
                    keyword = "func" if method in typeaware.POOL_METHODS else "fn"
                    self._record(path, typeaware.sink_call(ctx, keyword, 0, f"a process pool's {method}()",
                                                           self._locals(path, ctx)))
        except Exception as exc:
            self._internal_error(ctx.api.path, exc)
        return ctx.default_return_type

    def _context_pool(self, ctx: MethodContext) -> Type:
        try:
            path = self._checked_path(ctx)
            self._maybe_test_crash()
            if path is not None and self._enabled(path, "DTL201"):
                self._record(path, typeaware.sink_call(ctx, "initializer", 2, "the pool's initializer",
                                                       self._locals(path, ctx)))
        except Exception as exc:
            self._internal_error(ctx.api.path, exc)
        return ctx.default_return_type

    def _sink_function(self, fullname: str, ctx: FunctionContext) -> Type:
        try:
            path = self._checked_path(ctx)
            self._maybe_test_crash()
            if path is not None and self._enabled(path, "DTL201"):
                keyword, sink = typeaware.SINK_FUNCTIONS[fullname]
                position = 0 if keyword == "fn" else None
                self._record(path, typeaware.sink_call(ctx, keyword, position, sink, self._locals(path, ctx)))
        except Exception as exc:
            self._internal_error(ctx.api.path, exc)
        return ctx.default_return_type

    def _dataloader(self, ctx: FunctionContext) -> Type:
        try:
            path = self._checked_path(ctx)
            self._maybe_test_crash()
            if path is not None and self._enabled(path, "DTL202"):
                self._record(path, typeaware.dataloader_call(ctx, self._locals(path, ctx)))
        except Exception as exc:
            self._internal_error(ctx.api.path, exc)
        return ctx.default_return_type

    def _checked_path(self, ctx: FunctionContext | MethodContext) -> str | None:
        """The file being checked, unless mypy reports nothing for it (stubs, silenced
        imports, installed packages)."""
        errors = ctx.api.msg.errors
        self._errors = errors
        path = ctx.api.path
        if path.endswith(".pyi") or path in errors.ignored_files:
            return None
        return path

    def _locals(self, path: str, ctx: FunctionContext | MethodContext) -> typeaware.LocalCallables:
        if path not in self._local:
            self._local[path] = typeaware.LocalCallables(ctx.api.tree.defs)  # type: ignore[attr-defined]
        return self._local[path]

    def _record(self, path: str, hits: list[typeaware.Hit]) -> None:
        found = self._hits.setdefault(path, {})
        for line, column, code, message in hits:
            found[(line, column, code)] = message

    def _enabled(self, path: str, code: str) -> bool:
        return code in _codes_for(path)

    # -- reporting -------------------------------------------------------------------

    def _finish(self, file: MypyFile) -> None:
        path = file.path
        hits = self._hits.pop(path, {})
        local = self._local.pop(path, None)
        if path.endswith(".pyi"):
            return
        errors = self._errors_for(file)
        if errors is None or path in errors.ignored_files:
            return
        codes = _codes_for(path)
        text = _source(path)
        if text is None:
            return
        linted = self._worker.collect(path) if self._worker is not None else None
        if linted is None:
            linted = engine_findings(path, text)
        findings = {(f.line, f.column, f.code): f for f in linted}
        if file_is_exempt(text):
            return  # the engine found nothing; the type-aware checks are silenced alike
        if "DTL101" in codes and "dtype" in text:
            hits.update(((line, column, code), message) for line, column, code, message
                        in typeaware.float32_fields(file.defs, config_of(path).options, local))
        if hits:
            lines = _NEWLINE.split(text)
            # The engine's findings come with their noqa comments applied; the type-aware
            # ones get the very same test, so that what silences the CLI silences mypy.
            suppressions = Suppressions(text, lines)
            for (line, column, code), message in hits.items():
                if suppressions.covers(line, code):
                    continue
                char_column = _char_column(lines, line, column)
                findings.setdefault((line, char_column, code),
                                    Reported(line, char_column, line, char_column, code, message))
        if findings:
            self._report(file, sorted(findings.values()))

    def _report(self, file: MypyFile, findings: list[Reported]) -> None:
        errors = self._errors_for(file)
        if errors is None or file.path in errors.ignored_files:
            return
        with _reporting_into(errors, file, self.options):
            report_findings(errors, findings)

    def _note_errors(self) -> None:
        """mypy asks for hooks while it type-checks, with its checker at hand: the error
        list is taken from there, once, so that finding it later is seldom needed."""
        if self._errors is None:
            checker = checker_state.type_checker
            if checker is not None:
                self._errors = checker.msg.errors

    def _errors_for(self, file: MypyFile) -> Errors | None:
        """mypy's error list. Hooks and the checker hand it over; a run in which neither
        has been seen yet (a warm run that rechecks only files without calls) finds it
        through the module's build state, once."""
        if self._errors is None:
            checker = checker_state.type_checker
            if checker is not None:
                self._errors = checker.msg.errors
        if self._errors is None and not self._searched:
            self._searched = True
            self._errors = _find_errors(file)
        return self._errors

    def _maybe_test_crash(self) -> None:
        if self._test_crash:
            raise RuntimeError(f"deliberate crash ({TEST_CRASH_VARIABLE} is set)")

    def _internal_error(self, path: str, exc: Exception, file: MypyFile | None = None) -> None:
        """One note per mypy run, on line 1 of the file being checked; never raises."""
        if self._crashed:
            return
        message = (f"dtype-lint mypy plugin: internal error ({type(exc).__name__}: {exc}); "
                   "dtype hazards may be missing; please report it")
        try:
            errors = self._errors if file is None else self._errors_for(file)
            if errors is None or path.endswith(".pyi") or path in errors.ignored_files:
                return  # nothing is reported for this file: tell it at the next one
            self._crashed = True
            if errors.file == path:
                errors.report(1, None, message, severity="note")
            elif file is not None:
                with _reporting_into(errors, file, self.options):
                    errors.report(1, None, message, severity="note")
        except Exception:
            pass  # never let reporting the failure fail mypy


def report_findings(errors: Errors, findings: list[Reported]) -> None:
    """Each finding as an error of mypy's current file, then a note per step of its flow.
    A note names the place instead of being reported there: mypy reports and caches
    errors per file, and the place may be in a file it does not check. Notes are not
    tied to their error (``parent_error``): mypy cannot write such notes to its cache."""
    for f in findings:
        code, where = _error_code(f.code), {"end_line": f.end_line, "end_column": f.end_column - 1}
        errors.report(f.line, f.column - 1, f.message, code=code, **where)
        for path, line, column, message in f.flow:
            errors.report(f.line, f.column - 1, f"via {path}:{line}:{column}: {message}", code=code,
                          severity="note", **where)


def _worker_pays() -> bool:
    """Whether linting in a worker process can overlap mypy's work: not when the user
    turned it off, and not with a single usable core, where the worker would only add
    its own start-up to the same amount of work."""
    if os.environ.get(WORKER_VARIABLE, "1") == "0":
        return False
    cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else range(os.cpu_count() or 1)
    return len(cores) > 1


def _usable_config(path: str):  # -> dtype_lint.project.config.Config
    """The configuration of the file at ``path``; mypy's blocking error where it cannot
    be used."""
    from dtype_lint.project.config import ConfigError

    try:
        return config_of(path)
    except ConfigError as exc:
        # Not reported at a line of the file: the error is the configuration's. mypy
        # prints the messages of a CompileError as they are, and exits 2.
        raise CompileError([exc.text], use_stdout=False) from None


@functools.lru_cache(maxsize=1024)
def _codes_for(path: str) -> frozenset[str]:
    return frozenset(config_of(path).codes_for(path))


_INSTALLED = (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}")


def _users_source(file: MypyFile) -> bool:
    """A file mypy parsed from source that it may report on: not a stub, not an
    installed package, not a tree read back from its cache."""
    path = file.path
    if path.endswith(".pyi") or getattr(file, "raw_data", None) is not None:
        return False
    return _users_path(path)


def _users_path(path: str) -> bool:
    """Not a file of an installed package or of the standard library."""
    full = os.path.abspath(path)
    return not any(part in full for part in _INSTALLED) and not full.startswith(sys.base_prefix + os.sep)


def _source(path: str) -> str | None:
    """The file's text, decoded as mypy decoded it (the engine's decoding, which honours
    the same coding declarations, is not imported into mypy's process for this)."""
    try:
        with open(path, "rb") as handle:
            return decode_python_encoding(handle.read())
    except (OSError, UnicodeDecodeError, LookupError, SyntaxError):
        return None


def _char_column(lines: list[str], line: int, byte_column: int) -> int:
    """mypy's 0-based UTF-8 byte column as the CLI's 1-based character column."""
    if line > len(lines) or byte_column < 0:
        return byte_column + 1
    text = lines[line - 1]
    if text.isascii():
        return byte_column + 1
    return len(text.encode("utf-8")[:byte_column].decode("utf-8", "ignore")) + 1


class _reporting_into:
    """Point mypy's error list at ``file`` while reporting, and back afterwards. After a
    file's last check it already points there; the switch is for safety."""

    def __init__(self, errors: Errors, file: MypyFile, options: MypyOptions) -> None:
        self.errors = errors
        self.file = file
        self.options = options
        self.saved: tuple | None = None

    def __enter__(self) -> None:
        errors = self.errors
        if errors.file != self.file.path:
            self.saved = (errors.file, errors.target_module, errors.options, errors.scope)
            errors.set_file(self.file.path, self.file.fullname, self.options.clone_for_module(self.file.fullname))

    def __exit__(self, *exc: object) -> None:
        if self.saved is not None:
            file, module, options, scope = self.saved
            self.errors.set_file(file, module, options, scope)


def _find_errors(file: MypyFile) -> Errors | None:
    # The module's build state, which called this hook, holds the build manager, which
    # holds the error list: look up the calling frames first, then (should mypy call
    # the hook otherwise) the objects that refer to the tree. gc only scans objects
    # created since mypy's last gc.freeze(); either runs at most once per mypy run.
    frame = sys._getframe(1)
    while frame is not None:
        errors = getattr(getattr(frame.f_locals.get("self"), "manager", None), "errors", None)
        if isinstance(errors, Errors):
            return errors
        frame = frame.f_back
    for holder in gc.get_referrers(file):
        manager = getattr(holder, "manager", None)
        errors = getattr(manager, "errors", None)
        if isinstance(errors, Errors):
            return errors
    return None


def plugin(version: str) -> type[Plugin]:
    return DtypeLintPlugin
