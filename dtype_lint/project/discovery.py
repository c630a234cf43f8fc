"""Which files a run lints: files matching `include` (Python files and notebooks) under
the given paths, minus excluded ones."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

from dtype_lint.project.excludes import Excludes
from dtype_lint.core.finding import FileError


def discover(
    paths: list[str], include: Excludes, exclude: Excludes, root: str, force_exclude: bool = False,
) -> Iterator[str | FileError]:
    """Yield each Python file to lint, or a FileError for a path that cannot be.

    Files named explicitly are linted even if excluded, as ruff does, unless
    ``force_exclude`` (pre-commit names every file). In folders, files are those that
    ``include`` matches (``Config.include``). Symlinked directories are not
    followed, so a symlink loop cannot trap the walk.
    """
    root_abs = os.path.abspath(root)
    for path in paths:
        if os.path.isdir(path):
            yield from _walk(path, exclude, include, root_abs)
        elif os.path.lexists(path):
            if not (force_exclude and _excluded(path, exclude, root_abs, is_dir=False)):
                yield path
        else:
            yield FileError(path, "no such file or directory")


def _walk(top: str, exclude: Excludes, include: Excludes, root_abs: str) -> Iterator[str | FileError]:
    def on_error(exc: OSError) -> None:
        errors.append(FileError(exc.filename or top, f"cannot list directory: {exc.strerror}"))

    errors: list[FileError] = []
    for folder, dirs, files in os.walk(top, onerror=on_error):
        yield from errors
        errors.clear()
        base = _relative(folder, root_abs)  # once per folder, not per file
        dirs[:] = sorted(
            d for d in dirs
            if not os.path.islink(os.path.join(folder, d)) and not exclude.match_file(f"{base}{d}/")
        )
        for name in sorted(files):
            if include.match_file(base + name) and not exclude.match_file(base + name):
                yield os.path.normpath(os.path.join(folder, name))
    yield from errors


def _relative(folder: str, root_abs: str) -> str:
    """The folder relative to the root, in posix form with a trailing slash: what its
    entries' names are matched after ("" for the root itself, and, as for a path named
    outside the root, for a folder outside it: its entries match by their own names)."""
    relative = os.path.relpath(os.path.abspath(folder), root_abs)
    if relative == "." or relative.startswith(".."):
        return ""
    return Path(relative).as_posix() + "/"


def _excluded(path: str, exclude: Excludes, root_abs: str, is_dir: bool) -> bool:
    relative = os.path.relpath(os.path.abspath(path), root_abs)
    if relative.startswith(".."):
        relative = os.path.basename(path)
    relative = Path(relative).as_posix() + ("/" if is_dir else "")
    return exclude.match_file(relative)
