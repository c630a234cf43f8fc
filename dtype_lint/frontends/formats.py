"""Output formats: text, full, json, sarif, github, and the statistics table.

A finding whose evidence is elsewhere (``Finding.flow``) shows its steps: in SARIF as a
code flow and related locations, as CodeQL's path queries do; in text and full output,
with ``--show-flow``, as one ``via`` line per step under the finding.

SARIF results carry a ``primaryLocationLineHash`` of their own (the code and the
finding's line text with whitespace collapsed, and which such line of the file it is), so
GitHub code scanning follows an alert when lines are added or removed above it; each
rule's ``helpUri`` is its page on the documentation site (written by :mod:`.docs`).
"""

from __future__ import annotations

import collections
import hashlib
import json
import urllib.parse
from pathlib import Path
from typing import Callable, TextIO

from dtype_lint import __version__
from dtype_lint.core.finding import CellMap, Edit, FileError, Finding, Step
from dtype_lint.core.ruledoc import CONFIRM
from dtype_lint.frontends.console import paint
from dtype_lint.frontends.severity import ERROR, GITHUB_COMMAND, level
from dtype_lint.rules.codes import rule_codes

FORMATS = ("text", "full", "json", "sarif", "github")


def write(fmt: str, findings: list[Finding], errors: list[FileError], out: TextIO,
          lines_of: Callable[[str], list[str]], color: bool = False, show_flow: bool = False) -> None:
    """``lines_of(path)`` gives a file's lines (for full and sarif); ``color`` paints
    text and full output; ``show_flow`` adds their ``via`` lines."""
    if fmt == "json":
        json.dump([f.as_json() for f in findings], out, indent=2)
        out.write("\n")
    elif fmt == "sarif":
        json.dump(sarif(findings, errors, lines_of), out, indent=2)
        out.write("\n")
    elif fmt == "github":
        for f in findings:
            cell, line, end_line = f.position()
            in_cell = "" if cell is None else f"cell {cell}: "
            out.write(
                f"::{GITHUB_COMMAND[level(f)]} title=dtype-lint ({f.code}),file={f.path},line={line},col={f.column},"
                f"endLine={end_line},endColumn={f.end_column}::{in_cell}{f.code} {_escape(f.message)}\n"
            )
    else:
        for f in findings:
            where = paint(f.path, "1", color) + paint(f":{f.location()}:", "36", color)
            out.write(f"{where} {paint(f.code, '1;31', color)} {f.message}\n")
            if fmt == "full":
                out.write(_snippet(f, lines_of(f.path), color))
            if show_flow:
                out.writelines(_via(f, step, color) for step in f.flow)
                if f.confidence != "high":
                    out.write(f"    {paint('confidence:', '2', color)} {f.confidence}: {f.basis}\n")
                out.write(f"    {paint('confirm:', '2', color)} {CONFIRM[f.code[3]][0]}\n")


def write_errors(errors: list[FileError], out: TextIO, fmt: str) -> None:
    """Each error on one line; one with a position (a syntax error) is placed as
    findings are, ``path:line:column``, so that editors and CI can jump to it."""
    for e in errors:
        if fmt == "github":
            where = f",line={e.line},col={e.column}" if e.line is not None else ""
            in_cell = "" if e.cell is None else f"cell {e.cell}: "
            out.write(f"::error title=dtype-lint,file={e.path}{where}::{in_cell}{_escape(e.reason)}\n")
        else:
            out.write(f"{e.location()}: error: {e.reason}\n")


def statistics(findings: list[Finding], out: TextIO) -> None:
    """A count per code, most frequent first, marked as ruff marks them: `[*]` where
    `--fix` fixes some of them, `[ ]` where none has a fix or only unsafe ones (which
    `--unsafe-fixes` applies, and so leaves no finding to count); no marks at all where
    no code has a `[*]`."""
    counts = collections.Counter(f.code for f in findings)
    fixable = {f.code for f in findings if f.fix and f.fix.applicability == "safe"}
    for code, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        mark = ("[*] " if code in fixable else "[ ] ") if fixable else ""
        out.write(f"{count:>6}  {code}  {mark}{rule_codes().get(code, '')}\n")


def sarif(findings: list[Finding], errors: list[FileError], lines_of: Callable[[str], list[str]]) -> dict[str, object]:
    """A SARIF 2.1.0 log with one run, rule metadata for every static rule."""
    from dtype_lint.rules.registry import RULES_BY_CODE

    codes = sorted(RULES_BY_CODE)
    index = {code: i for i, code in enumerate(codes)}
    rules = []
    for code in codes:
        doc = RULES_BY_CODE[code].doc
        rules.append({
            "id": code,
            "name": doc.name,
            "shortDescription": {"text": doc.summary},
            "fullDescription": {"text": " ".join(doc.why_bad.split())},
            "help": {"text": doc.summary, "markdown": doc.markdown()},
            "helpUri": doc.help_uri,
            "defaultConfiguration": {"level": ERROR if doc.default_enabled else "none"},
            # CodeQL's rule-level precision: what the rule's default findings measured.
            "properties": {"family": doc.family, **({"precision": doc.precision} if doc.precision else {})},
        })
    results = []
    fingerprints = line_hashes(findings, lines_of)
    for f in findings:
        cell, line, end_line = f.position()
        region = {"startLine": line, "startColumn": f.column, "endLine": end_line, "endColumn": f.end_column}
        result: dict[str, object] = {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": level(f),
            "message": {"text": f.message},
            "locations": [_location(f.path, region)],
            "partialFingerprints": {"primaryLocationLineHash": fingerprints[f]},
        }
        result["properties"] = {"confidence": f.confidence, **({"basis": f.basis} if f.basis else {})}
        if cell is not None:  # a notebook: the region's lines are the cell's
            result["properties"]["cell"] = cell  # type: ignore[index]
        if f.flow:
            result.update(_code_flow(f, region, cell))
        if f.fix:
            result["fixes"] = [{
                "description": {"text": f"{f.fix.applicability} fix"},
                "artifactChanges": [{
                    "artifactLocation": {"uri": _artifact_uri(f.path)},
                    "replacements": [_replacement(e, f.cells) for e in f.fix.edits],
                }],
            }]
        results.append(result)
    notifications = [_notification(e) for e in errors]
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "dtype-lint", "version": __version__,
                                "informationUri": "https://pypi.org/project/dtype-lint/", "rules": rules}},
            "results": results,
            "invocations": [{"executionSuccessful": not errors,
                             "toolExecutionNotifications": notifications}],
        }],
    }


def _artifact_uri(path: str) -> str:
    """A path as the URI reference SARIF requires (§3.4.3): a relative path stays
    relative (to the folder the run started in), with forward slashes; an absolute one
    (a path given so, an installed package's file in a flow) becomes a ``file:`` URI,
    which GitHub makes relative to the checkout. Both are percent-encoded: a space or a
    ``#`` in a raw path would not be a URI reference."""
    native = Path(path)
    if native.is_absolute():
        return native.as_uri()
    return urllib.parse.quote(path.replace("\\", "/"))


def _location(path: str, region: dict[str, int], message: str | None = None,
              cell: int | None = None) -> dict[str, object]:
    location: dict[str, object] = {"physicalLocation": {"artifactLocation": {"uri": _artifact_uri(path)},
                                                        "region": region}}
    if message is not None:
        location["message"] = {"text": message}
    if cell is not None:  # a notebook: the region's lines are the cell's
        location["properties"] = {"cell": cell}
    return location


def _code_flow(f: Finding, region: dict[str, int], cell: int | None) -> dict[str, object]:
    """The steps as one thread flow ending at the finding (a viewer walks it as a path),
    and as related locations numbered from 1, as CodeQL's path queries give them."""
    steps = []
    for step in f.flow:
        step_cell, line = _step_position(f, step)
        steps.append(_location(step.path, {"startLine": line, "startColumn": step.column}, step.message, step_cell))
    path = [*steps, _location(f.path, region, f.message, cell)]
    return {
        "codeFlows": [{"threadFlows": [{"locations": [{"location": place} for place in path]}]}],
        "relatedLocations": [{"id": number, **place} for number, place in enumerate(steps, start=1)],
    }


def _step_position(f: Finding, step: Step) -> tuple[int | None, int]:
    """``(cell, line)`` of a step as a user reads it: a step in the finding's own
    notebook is in the module its cells are linted as, and is placed in its cell."""
    if f.cells is not None and step.path == f.path:
        return f.cells.locate(step.line)
    return None, step.line


def line_hashes(findings: list[Finding], lines_of: Callable[[str], list[str]]) -> dict[Finding, str]:
    """Each finding's fingerprint, ``HASH:N``: HASH from the code and the finding's
    line with whitespace collapsed (not its number), N counting the findings of a file
    with the same HASH, in line order, as GitHub's own line hashes do."""
    seen: collections.Counter[tuple[str, str]] = collections.Counter()
    out = {}
    for f in sorted(findings):
        lines = lines_of(f.path)
        text = " ".join(lines[f.line - 1].split()) if 0 < f.line <= len(lines) else ""
        digest = hashlib.sha256(f"{f.code}\0{text}".encode()).hexdigest()[:16]
        seen[f.path, digest] += 1
        out[f] = f"{digest}:{seen[f.path, digest]}"
    return out


def _notification(error: FileError) -> dict[str, object]:
    """A file error; a syntax error is placed (in a notebook, within its cell)."""
    location: dict[str, object] = {"artifactLocation": {"uri": _artifact_uri(error.path)}}
    notification: dict[str, object] = {"level": "error", "message": {"text": error.reason},
                                       "locations": [{"physicalLocation": location}]}
    if error.line is not None:
        location["region"] = {"startLine": error.line, "startColumn": error.column}
    if error.cell is not None:
        notification["properties"] = {"cell": error.cell}
    return notification


def _replacement(edit: Edit, cells: CellMap | None) -> dict[str, object]:
    region = edit.as_json(cells)
    replacement: dict[str, object] = {
        "deletedRegion": {"startLine": region["line"], "startColumn": edit.column,
                          "endLine": region["end_line"], "endColumn": edit.end_column},
        "insertedContent": {"text": edit.content},
    }
    if cells is not None:
        replacement["properties"] = {"cell": region["cell"], "endCell": region["end_cell"]}
    return replacement


def _snippet(f: Finding, lines: list[str], color: bool) -> str:
    if not 0 < f.line <= len(lines):
        return ""
    text = lines[f.line - 1].expandtabs(1)
    width = max(1, (f.end_column - f.column) if f.end_line == f.line else len(text) - f.column + 1)
    gutter = f"{f.position()[1]:>5} | "  # in a notebook, the line within the cell
    caret = " " * (len(gutter) + f.column - 1) + paint("^" * width, "1;31", color)
    return f"{gutter}{text}\n{caret}\n"


def _via(f: Finding, step: Step, color: bool) -> str:
    """One step under its finding, placed as findings are (``PATH:LINE:COL:``), so that
    editors and terminals can jump to it."""
    cell, line = _step_position(f, step)
    where = f"{line}:{step.column}" if cell is None else f"cell {cell}:{line}:{step.column}"
    return f"    via {paint(step.path, '1', color)}{paint(f':{where}:', '36', color)} {step.message}\n"


def _escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")

