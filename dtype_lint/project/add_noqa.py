"""`dtype-lint check --add-noqa`: write `# noqa: CODE` for every finding of a run.

The comments come from :func:`dtype_lint.core.noqa.noqa_edits`; the file is written with
the same atomic writer as `--fix` (encoding, BOM, line endings and mode kept; a file that
changed since it was read is left alone and reported). A file that could not be read or
parsed has no findings and an error, and is never touched.
"""

from __future__ import annotations

import dataclasses

from dtype_lint.core.engine import LintError, parse
from dtype_lint.core.finding import FileError
from dtype_lint.core.fixes import apply_edits, write_atomic
from dtype_lint.core.noqa import noqa_edits
from dtype_lint.project.config import Config
from dtype_lint.project.file_lint import FileResult, lint_data


@dataclasses.dataclass
class Added:
    """What a run wrote: comments added or extended, and in how many files."""

    comments: int = 0
    files: int = 0


def add_noqa(results: list[FileResult], config: Config) -> tuple[list[FileResult], Added]:
    """The results after writing; each written file is linted again, so what is left
    (nothing, unless a file could not take a comment) is what the run reports."""
    added = Added()
    out = []
    for result in results:
        if result.error or not result.findings or result.source is None or result.data is None:
            out.append(result)
            continue
        edits = noqa_edits(result.source.text, result.findings)
        if not edits:
            out.append(result)
            continue
        new_text = apply_edits(result.source.text, edits)
        try:
            parse(new_text)  # a comment never breaks a file; if one would, nothing is written
            new_data = result.source.encode(new_text)
            write_atomic(result.path, new_data, result.data)
        except (LintError, OSError) as exc:
            reason = str(exc) if isinstance(exc, LintError) else f"cannot write: {exc.strerror}"
            out.append(FileResult(result.path, result.findings, FileError(result.path, f"# noqa not added: {reason}")))
            continue
        added.comments += len(edits)
        added.files += 1
        out.append(lint_data(result.path, new_data, config))
    return out, added

