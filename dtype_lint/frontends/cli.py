"""The `dtype-lint` command: check (with fixes), fix, explain, rules, server, device.

Exit codes: 0 no findings, 1 findings, 2 usage, configuration or file errors. When the
reader of the output goes away (`dtype-lint check | head -1`) the command stops
quietly with 0, as ruff does: no traceback.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import sys
from pathlib import Path

from dtype_lint import __version__
from dtype_lint.core import prefilter_switch
from dtype_lint.project.cache import DEFAULT_DIR as DEFAULT_CACHE_DIR
from dtype_lint.project.cache import Cache, cache_refused
from dtype_lint.project.config import (PYTHON_VARIABLE, Config, ConfigError, find_pyproject, load_config,
                                       user_interpreter, validate_selector)
from dtype_lint.core.confidence import LEVELS
from dtype_lint.core.engine import NEWLINE, LintError, Source, lint_source
from dtype_lint.core.finding import FileError, Finding
from dtype_lint.core.fixes import applicable, fixed_text, write_atomic
from dtype_lint.frontends.console import diff_summary, summary, use_color
from dtype_lint.frontends.formats import FORMATS, statistics, write, write_errors
from dtype_lint.project.parallel import default_jobs
from dtype_lint.project.file_lint import FileResult, decode, lint_data
from dtype_lint.project.notebooks import NotebookSource
from dtype_lint.project.add_noqa import add_noqa
from dtype_lint.project.runner import lint_paths, summarize

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
NO_FILES = "warning: No Python files found under the given path(s)"  # ruff's words


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse exits 2 too; say so in our words
        self.print_usage(sys.stderr)
        sys.stderr.write(f"dtype-lint: error: {message}\n")
        raise SystemExit(EXIT_ERROR)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="dtype-lint", description="Find dtype hazards in ML code.")
    parser.add_argument("--version", action="version", version=f"dtype-lint {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, help_text in (("check", "lint files (default: the current folder)"),
                            ("fix", "lint and apply safe fixes (same as check --fix)")):
        cmd = sub.add_parser(name, help=help_text)
        cmd.add_argument("paths", nargs="*", default=["."], metavar="PATH", help="files or folders; - reads stdin")
        cmd.add_argument("--config", metavar="FILE", help="pyproject.toml to use instead of discovery")
        cmd.add_argument("--select", metavar="CODES", help="comma-separated codes or prefixes to run")
        cmd.add_argument("--extend-select", metavar="CODES", help="codes or prefixes to add")
        cmd.add_argument("--ignore", metavar="CODES", help="codes or prefixes to skip")
        cmd.add_argument("--min-confidence", choices=LEVELS, default=None,
                         help="hide findings below this confidence (default: the config's, else medium; "
                              "low is the audit mode)")
        cmd.add_argument("--output-format", choices=FORMATS, default="text")
        cmd.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
        cmd.add_argument("--statistics", action="store_true", help="print a count per code instead")
        cmd.add_argument("--verbose", "-v", action="store_true",
                         help="print how many files were linted and how many answered from the cache (stderr)")
        cmd.add_argument("--show-flow", action="store_true",
                         help="under a finding whose evidence is elsewhere, a `via` line per place (text, full)")
        cmd.add_argument("--fix", action="store_true", default=name == "fix", help="apply safe fixes")
        cmd.add_argument("--unsafe-fixes", action="store_true", help="also apply unsafe fixes")
        cmd.add_argument("--diff", action="store_true", help="print the fixes as a diff; write nothing")
        cmd.add_argument("--add-noqa", action="store_true",
                         help="add `# noqa: CODE` for every finding (to adopt dtype-lint on existing code)")
        cmd.add_argument("-q", "--quiet", action="store_true", help="print findings only, no summary")
        cmd.add_argument("--silent", action="store_true", help="print nothing; the exit code tells")
        cmd.add_argument("--force-exclude", action="store_true",
                         help="apply exclude to files named on the command line too (for pre-commit)")
        cmd.add_argument("--stdin-filename", metavar="PATH", help="the path of the code read from stdin")
        cmd.add_argument("-j", "--jobs", type=_positive, default=None, metavar="N",
                         help="lint with N processes (default: all cores)")
        cmd.add_argument("--no-cache", action="store_true", help="lint every file; read and write no cache")
        cmd.add_argument("--cache-dir", metavar="DIR",
                         help=f"where to keep results of unchanged files (default: {DEFAULT_CACHE_DIR}/ beside the config)")
        cmd.add_argument("--python", metavar="PATH",
                         help=f"run this interpreter to ask where its packages are installed (also ${PYTHON_VARIABLE}; "
                              "the configuration's `python` is read, never run)")
        # Parse every file whole with every rule: for comparing findings and timings.
        cmd.add_argument("--no-prefilter", action="store_true", help=argparse.SUPPRESS)
    explain = sub.add_parser("explain", help="print a rule's docs")
    explain.add_argument("code")
    rules = sub.add_parser("rules", help="list every rule")
    rules.add_argument("--json", action="store_true")
    sub.add_parser("server", help="run the language server over stdio (needs the `server` extra)")
    sub.add_parser("device", help="report the devices and the precision they really compute in ([--json])")
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        code = _main(argv)
        sys.stdout.flush()  # here, not at the interpreter's exit, where a closed pipe is a traceback
        return code
    except BrokenPipeError:
        return _reader_gone()


def _reader_gone() -> int:
    """stdout's reader closed the pipe: nothing more can be shown, and Python's own last
    flush of stdout at exit would fail again, so stdout is pointed at the null device."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is no file (an embedding program's stream)
        pass
    return EXIT_CLEAN


def _main(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["device"]:
        # The runtime module parses its own flags (argparse's REMAINDER drops a leading --json).
        from dtype_lint.runtime.device_cli import main as device_main

        return device_main(argv[1:])
    args = build_parser().parse_args(argv)
    try:
        if args.command in ("check", "fix"):
            return _check(args)
        if args.command == "explain":
            return _explain(args.code)
        if args.command == "server":
            return _server()
        return _rules(args.json)
    except ConfigError as exc:
        sys.stderr.write(exc.text + "\n")
        return EXIT_ERROR


def _explain(code: str) -> int:
    from dtype_lint.rules.registry import all_docs

    docs = all_docs()
    if code.upper() not in docs:
        sys.stderr.write(f"dtype-lint: unknown rule code '{code}'; `dtype-lint rules` lists them\n")
        return EXIT_ERROR
    sys.stdout.write(docs[code.upper()].markdown())
    return EXIT_CLEAN


def _server() -> int:
    try:
        from dtype_lint.frontends.server.app import serve
    except ModuleNotFoundError as exc:
        if exc.name not in ("pygls", "lsprotocol"):
            raise
        sys.stderr.write("dtype-lint: the language server needs pygls: pip install 'dtype-lint[server]'\n")
        return EXIT_ERROR
    return serve()


def _rules(as_json: bool) -> int:
    from dtype_lint.rules.registry import all_docs

    docs = list(all_docs().values())
    if as_json:
        json.dump([d.as_json() for d in docs], sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        for d in docs:
            flag = "" if d.default_enabled else " (opt-in)"
            sys.stdout.write(f"{d.code}  {d.name:<34} {d.kind:<8} {d.summary}{flag}\n")
    return EXIT_CLEAN


def resolve_config(args: argparse.Namespace) -> Config:
    path = Path(args.config) if args.config else find_pyproject(
        [args.stdin_filename] if args.paths == ["-"] and args.stdin_filename else args.paths
    )
    if args.config and not Path(args.config).is_file():
        raise ConfigError(f"{args.config}: no such file")
    config = load_config(path)
    overrides = {}
    for flag, field in (("select", "select"), ("extend_select", "extend_select"), ("ignore", "ignore")):
        value = getattr(args, flag)
        if value is not None:
            codes = tuple(c.strip() for c in value.split(",") if c.strip())
            for code in codes:
                validate_selector(code, f"--{flag.replace('_', '-')}")
            overrides[field] = codes if field != "ignore" else config.ignore + codes
    if args.min_confidence is not None:
        overrides["options"] = dataclasses.replace(config.options, min_confidence=args.min_confidence)
    if args.python:  # over $DTYPE_LINT_PYTHON, which load_config read
        overrides["interpreter"] = user_interpreter(args.python)
    return dataclasses.replace(config, **overrides)


def _positive(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of processes, got {value!r}")
    return int(value)


def _check(args: argparse.Namespace) -> int:
    config = resolve_config(args)
    fixing = args.fix or args.unsafe_fixes or args.diff
    if args.add_noqa and (fixing or args.paths == ["-"]):
        sys.stderr.write("dtype-lint: error: --add-noqa writes files: not with --fix, --unsafe-fixes, --diff or stdin\n")
        return EXIT_ERROR
    _warn(args, config.environment_problem())
    if args.paths == ["-"]:
        return _check_stdin(args, config, fixing)
    cache = None
    if not args.no_cache:
        folder = args.cache_dir or os.path.join(config.root, DEFAULT_CACHE_DIR)
        refused = cache_refused(folder)
        _warn(args, refused)
        if refused is None:
            cache = Cache(folder, f"{config.fingerprint()}\0prefilter={not args.no_prefilter}")
    jobs = args.jobs or default_jobs()
    with prefilter_switch.switched(not args.no_prefilter):
        results = lint_paths(args.paths, config, args.force_exclude, jobs, cache, keep_source=fixing or args.add_noqa)
    if not results and not args.silent:
        sys.stderr.write(f"dtype-lint: {NO_FILES}\n")
    if args.verbose:
        hits = sum(r.from_cache for r in results)
        sys.stderr.write(f"dtype-lint: {len(results)} files: {len(results) - hits} linted, {hits} from the cache\n")
    found = sum(len(r.findings) for r in results)
    if args.add_noqa:
        results, added = add_noqa(results, config)
        run = summarize(results)
        _report(args, run.findings, run.errors, run.files, closing=False)
        if not (args.quiet or args.silent):
            # after the findings left, if any; never inside JSON or SARIF
            out = sys.stdout if args.output_format in ("text", "full") else sys.stderr
            out.write(f"Added {added.comments} `# noqa` comment{'' if added.comments == 1 else 's'} "
                      f"in {added.files} file{'' if added.files == 1 else 's'}.\n")
        return _exit_code(args, run.findings, run.errors)
    if fixing:
        results = [_fix_file(r, config, args) for r in results]
    run = summarize(results)
    _report(args, run.findings, run.errors, run.files, fixed=found - len(run.findings) if fixing else 0)
    return _exit_code(args, run.findings, run.errors)


def _warn(args: argparse.Namespace, warning: str | None) -> None:
    """A warning on stderr: the run goes on (without the cache, the installed packages)."""
    if warning is not None and not args.silent:
        sys.stderr.write(f"dtype-lint: warning: {warning}\n")


def _check_stdin(args: argparse.Namespace, config: Config, fixing: bool) -> int:
    path = args.stdin_filename or "-"
    data = sys.stdin.buffer.read()
    errors: list[FileError] = []
    findings: list[Finding] = []
    try:
        source = Source.from_bytes(data)
        findings = lint_source(source.text, path, config.selected(path), config.options, view=config.view(path))
        if fixing and not args.diff:
            fixes = applicable(findings, args.unsafe_fixes)
            new = fixed_text(source.text, fixes) if fixes else source.text
            sys.stdout.buffer.write(source.encode(new))
            remaining = lint_source(new, path, config.selected(path), config.options, view=config.view(path))
            _report(args, remaining, errors, 1, stream=sys.stderr, fixed=len(findings) - len(remaining),
                    lines_of=lambda _: NEWLINE.split(new))
            return _exit_code(args, remaining, errors)
        if args.diff:
            result = _fix_text(FileResult(path, findings, source=source, data=data), args)
            findings = result.findings
    except LintError as exc:
        errors.append(exc.at(path))
    text = source.text if not errors else ""
    _report(args, findings, errors, 1, lines_of=lambda _: NEWLINE.split(text))
    return _exit_code(args, findings, errors)


def _fix_file(result: FileResult, config: Config, args: argparse.Namespace) -> FileResult:
    if result.error or not applicable(result.findings, args.unsafe_fixes) or result.source is None:
        return result
    fixed = _fix_text(result, args)
    if fixed.error or args.diff or fixed.source is None:
        return fixed
    try:
        assert result.data is not None and result.source is not None
        new_data = result.source.encode(fixed.source.text)
        write_atomic(result.path, new_data, result.data)
    except (LintError, OSError) as exc:
        reason = str(exc) if isinstance(exc, LintError) else f"cannot write: {exc.strerror}"
        return FileResult(result.path, result.findings, FileError(result.path, reason))
    return lint_data(result.path, new_data, config)


def _fix_text(result: FileResult, args: argparse.Namespace) -> FileResult:
    """The result with its fixes applied in memory (or printed as a diff)."""
    assert result.source is not None
    fixes = applicable(result.findings, args.unsafe_fixes)
    if not fixes:
        return result
    try:
        new_text = fixed_text(result.source.text, fixes)
    except LintError as exc:
        return FileResult(result.path, result.findings, FileError(result.path, str(exc)))
    if args.diff:
        try:
            _write_diff(result.path, result.source, new_text)
        except LintError as exc:
            return FileResult(result.path, result.findings, FileError(result.path, str(exc)))
        return result
    unfixed = [f for f in result.findings if f not in fixes]
    return FileResult(result.path, unfixed, source=dataclasses.replace(result.source, text=new_text))


def _write_diff(path: str, source: Source | NotebookSource, new_text: str) -> None:
    """A unified diff of the fixes: of the file, or of each notebook cell they change
    (``a/train.ipynb:cell 3``), as ruff shows a notebook's."""
    import difflib

    if isinstance(source, NotebookSource):
        pieces = [(f"{path}:cell {number}", old, new) for number, old, new in source.changed_cells(new_text)]
    else:
        pieces = [(path, source.text, new_text)]
    for name, old, new in pieces:
        old_lines = [line + "\n" for line in NEWLINE.split(old)]
        new_lines = [line + "\n" for line in NEWLINE.split(new)]
        sys.stdout.writelines(difflib.unified_diff(old_lines, new_lines, f"a/{name}", f"b/{name}"))


def _report(args: argparse.Namespace, findings: list[Finding], errors: list[FileError], files: int, stream=None,
            fixed: int = 0, closing: bool = True, lines_of=None) -> None:
    """Findings, then (text and full) the closing summary, to ``stream``; file errors to
    stderr. ``-q`` leaves out the summary, ``--silent`` everything."""
    if args.silent:
        return
    out = stream or sys.stdout
    if args.diff:
        write_errors(errors, sys.stderr, "text")
        closing_line = diff_summary(findings, args.unsafe_fixes)
        if closing and closing_line and not args.quiet:
            out.write(closing_line + "\n")
        return
    if args.statistics:
        statistics(findings, out)
    else:
        # a file's lines are read once however many findings it has (full, sarif)
        lines = lines_of or functools.lru_cache(maxsize=4)(_lines_of)
        write(args.output_format, findings, errors, out, lines, use_color(out), args.show_flow)
    write_errors(errors, sys.stderr, args.output_format)
    if closing and not args.quiet and args.output_format in ("text", "full"):
        out.write(summary(findings, errors, files, fixed) + "\n")


def _lines_of(path: str) -> list[str]:
    try:
        return NEWLINE.split(decode(path, Path(path).read_bytes()).text)
    except (OSError, LintError):
        return []


def _exit_code(args: argparse.Namespace, findings: list[Finding], errors: list[FileError]) -> int:
    if errors:
        return EXIT_ERROR
    if args.diff:
        return EXIT_FINDINGS if applicable(findings, args.unsafe_fixes) else EXIT_CLEAN
    if findings and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


if __name__ == "__main__":
    raise SystemExit(main())
