"""`[tool.dtype-lint]` in pyproject.toml: discovery, validation and rule selection."""

from __future__ import annotations

import dataclasses
import fnmatch
import os
import re
import shutil
import sys
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Iterable

from dtype_lint.core.confidence import LEVELS
from dtype_lint.core.options import OPTION_KEYS, Options
from dtype_lint.core.reading import read_small
from dtype_lint.project.excludes import Excludes
from dtype_lint.rules.codes import opt_in_codes, rule_codes
from dtype_lint.rules.selection import Selected

if TYPE_CHECKING:
    from dtype_lint.core.rule import Rule

DEFAULT_EXCLUDE = (
    ".git", ".hg", ".svn", ".tox", ".nox", ".venv", "venv", ".env", "env", "__pycache__",
    "build", "dist", "site-packages", "node_modules", ".mypy_cache", ".pytest_cache",
    ".ruff_cache", ".dtype_lint_cache", "*.egg-info", ".eggs",
)
# Which files a folder run lints, matched like `exclude` (gitignore patterns): ruff's default.
DEFAULT_INCLUDE = ("*.py", "*.pyi", "*.ipynb")
_LIST_KEYS = {"select", "extend-select", "ignore", "extend-ignore", "exclude", "extend-exclude", "include",
              "extend-include", "src"}
_KNOWN_KEYS = _LIST_KEYS | {"per-file-ignores", "target-version", "min-confidence", "python"} | set(OPTION_KEYS)
_TARGET_VERSION = re.compile(r"py3(\d+)")  # ruff's spelling: py39, py310, ...
# The interpreter the user chooses to run for its search path, in every front-end
# (the CLI's --python wins over it); a repository's configuration cannot choose one.
PYTHON_VARIABLE = "DTYPE_LINT_PYTHON"
# A value quoted in a message is cut to this many characters: a configuration may hold
# a string of megabytes.
_QUOTED = 80
# A repository's configuration is read whole and parsed: bounded. The table itself holds
# a few hundred characters in practice; a 10 MB exclude pattern took 15 s and 1 GB to
# compile.
MAX_CONFIG_BYTES = 16 * 1024 * 1024
MAX_TABLE_CHARACTERS = 64 * 1024
_REQUIRES_PYTHON = re.compile(r"(?:>=|~=|==)\s*3\.(\d+)")


class ConfigError(Exception):
    """A configuration that cannot be used; the message names the key or value."""

    @property
    def text(self) -> str:
        """The one line every front-end shows for it (the CLI and flake8 on stderr, mypy
        in its output, the language server in a message), so that they read alike."""
        return f"dtype-lint: config error: {self}"


@dataclasses.dataclass(frozen=True)
class Config:
    """The effective configuration: which rules run where, and with which options."""

    select: tuple[str, ...] = ()  # empty: the default set
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    include: tuple[str, ...] = DEFAULT_INCLUDE
    options: Options = Options()
    root: str = "."  # folder that per-file-ignores and exclude are relative to
    source: str | None = None  # the file it came from
    # The project model: first-party source roots (`src`, relative to the config's
    # folder, like ruff's), and the environment whose installed packages imports resolve
    # into: `python`, a folder or a file in it, read and never run (like pyright's
    # venvPath, unlike mypy's python_executable); default: the running interpreter's.
    src: tuple[str, ...] = ()
    python: str | None = None
    # An interpreter the user chose to run instead (--python, $DTYPE_LINT_PYTHON): never
    # from a file of the repository.
    interpreter: str | None = None

    def codes(self) -> tuple[str, ...]:
        """The codes of the rules selected for every file (without importing the rules)."""
        every = sorted(rule_codes())
        if self.select:
            chosen = [c for c in every if _matches(c, self.select)]
        else:
            chosen = [c for c in every if c not in opt_in_codes()]
        chosen += [c for c in every if _matches(c, self.extend_select) and c not in chosen]
        return tuple(c for c in every if c in chosen and not _matches(c, self.ignore))

    def codes_for(self, path: str) -> tuple[str, ...]:
        """The codes selected for one file, after `per-file-ignores`."""
        codes = self.codes()
        if not self.per_file_ignores:
            return codes
        relative = _relative(path, self.root)
        ignored = [codes for pattern, codes in self.per_file_ignores if _glob_matches(relative, pattern)]
        return tuple(c for c in codes if not any(_matches(c, i) for i in ignored))

    def selected(self, path: str) -> Selected:
        """The rules selected for one file, imported when a file first needs them."""
        return Selected(self.codes_for(path))

    def rules(self) -> tuple[type[Rule], ...]:
        """The rules selected for every file."""
        from dtype_lint.rules.registry import RULES  # imports LibCST: only when linting

        codes = self.codes()
        return tuple(r for r in RULES if r.doc.code in codes)

    def rules_for(self, path: str) -> tuple[type[Rule], ...]:
        """The rules selected for one file, after `per-file-ignores`."""
        from dtype_lint.rules.registry import RULES

        codes = self.codes_for(path)
        return tuple(r for r in RULES if r.doc.code in codes)

    def exclude_spec(self) -> Excludes:
        return Excludes(self.exclude)

    def include_spec(self) -> Excludes:
        return Excludes(self.include)

    def fingerprint(self) -> str:
        """A stable text that changes whenever the effective configuration changes."""
        return repr((self.select, self.extend_select, self.ignore, self.per_file_ignores, self.options,
                     self.exclude, self.include, self.src, self.python, self.interpreter))

    def view(self, path: str):
        """The project model as the file at ``path`` sees it (core.model), shared by every
        file linted in this process with the same settings."""
        from dtype_lint.core.model.project import project_model

        return project_model(self.src, self.python, self.interpreter).view(path)

    def environment_problem(self) -> str | None:
        """Why the installed packages of the chosen environment cannot be looked up (they
        are then unknown to the project model), or None."""
        from dtype_lint.core.model.finder import located

        problem = located(self.python, self.interpreter).problem
        if problem is None:
            return None
        if self.interpreter:
            chosen = f"the interpreter chosen with --python or {PYTHON_VARIABLE} ({quoted(self.interpreter)})"
        else:
            chosen = f"python = {quoted(self.python or '')}" + (f" in {self.source}" if self.source else "")
        return f"{chosen}: {problem}; installed packages are not looked up"


def _matches(code: str, selectors: Iterable[str]) -> bool:
    return any(s == "ALL" or code.startswith(s) for s in selectors)


def _glob_matches(relative: str, pattern: str) -> bool:
    return fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(PurePosixPath(relative).name, pattern)


def _relative(path: str, root: str) -> str:
    try:
        return Path(os.path.relpath(os.path.abspath(path), os.path.abspath(root))).as_posix()
    except ValueError:  # another drive on Windows
        return Path(path).as_posix()


def quoted(value: object) -> str:
    """``repr(value)``, cut to a length a message can show."""
    return _cut(repr(value))


def _cut(text: str) -> str:
    return text if len(text) <= _QUOTED else f"{text[:_QUOTED]}... ({len(text)} characters)"


def user_interpreter(flag: str | None = None) -> str | None:
    """The interpreter the user chose to run: ``--python`` (``flag``), else
    ``$DTYPE_LINT_PYTHON``; a bare name is looked up on PATH, as a shell would."""
    chosen = flag or os.environ.get(PYTHON_VARIABLE)
    if not chosen:
        return None
    if os.sep not in chosen and (os.altsep is None or os.altsep not in chosen):
        chosen = shutil.which(chosen) or chosen
    return os.path.abspath(chosen)


def find_pyproject(paths: Iterable[str]) -> Path | None:
    """The nearest pyproject.toml with a [tool.dtype-lint] table, walking up from the
    first linted path (or the working directory)."""
    # abspath, not resolve: a symlink loop among the paths must not break discovery.
    start = Path(os.path.abspath(next(iter(paths), ".")))
    if not os.path.isdir(start):
        start = start.parent
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        # Textual test: a broken table must still be found, then reported by load_config.
        if candidate.is_file() and _mentions_the_table(candidate):
            return candidate
    return None


def _mentions_the_table(path: Path) -> bool:
    """Whether the file's text holds ``tool.dtype-lint``, read a chunk at a time: a
    repository's pyproject.toml may be of any size."""
    marker = b"tool.dtype-lint"
    try:
        with open(path, "rb") as handle:
            tail = b""
            while chunk := handle.read(1024 * 1024):
                if marker in tail + chunk:
                    return True
                tail = chunk[-len(marker):]
    except OSError:
        pass
    return False


def load_config(path: Path | None) -> Config:
    """Read and validate the table; ``None`` gives the defaults. Either way with the
    interpreter the user chose through the environment (:func:`user_interpreter`)."""
    return dataclasses.replace(_load_config(path), interpreter=user_interpreter())


def _load_config(path: Path | None) -> Config:
    if path is None:
        return Config()
    # Imported here: a run with no configuration file never needs it.
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        size = os.stat(path).st_size
        data = read_small(str(path), MAX_CONFIG_BYTES) if size <= MAX_CONFIG_BYTES else None
        if data is None:
            raise ConfigError(f"{path}: {size / 2**20:.1f} MiB is over the {MAX_CONFIG_BYTES // 2**20} MiB limit "
                              "for a configuration file" if size > MAX_CONFIG_BYTES else f"{path}: not a regular file")
        parsed = tomllib.loads(data.decode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8: {exc.reason} at byte {exc.start}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path}: invalid TOML: nested too deeply") from None
    tool, project = parsed.get("tool"), parsed.get("project")
    table = tool.get("dtype-lint", {}) if isinstance(tool, dict) else {}
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.dtype-lint] must be a table")
    if _text_in(table) > MAX_TABLE_CHARACTERS:
        raise ConfigError(f"{path}: [tool.dtype-lint] holds {_text_in(table)} characters of text, over the "
                          f"{MAX_TABLE_CHARACTERS} it takes")
    requires = project.get("requires-python") if isinstance(project, dict) else None
    return config_from_table(table, root=str(Path(path).parent), source=str(path),
                             requires_python=requires if isinstance(requires, str) else None)


def _text_in(value: Any) -> int:
    """How many characters of text a TOML value holds, keys included."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(len(k) + _text_in(v) for k, v in value.items())
    if isinstance(value, list):
        return sum(_text_in(v) for v in value)
    return 0


def config_from_table(table: dict[str, Any], root: str = ".", source: str | None = None,
                      requires_python: str | None = None) -> Config:
    where = f"{source}: " if source else ""
    unknown = sorted(set(table) - _KNOWN_KEYS)
    if unknown:
        raise ConfigError(f"{where}unknown key {quoted(unknown[0])} in [tool.dtype-lint]")
    lists: dict[str, tuple[str, ...]] = {}
    for key in _LIST_KEYS:
        if key in table:
            lists[key] = _string_list(table[key], key, where)
    for key in ("select", "extend-select", "ignore", "extend-ignore"):
        for code in lists.get(key, ()):
            validate_selector(code, f"{where}{key}")
    pfi: list[tuple[str, tuple[str, ...]]] = []
    raw_pfi = table.get("per-file-ignores", {})
    if not isinstance(raw_pfi, dict):
        raise ConfigError(f"{where}'per-file-ignores' must be a table of glob = [codes]")
    for pattern, codes in raw_pfi.items():
        codes = _string_list(codes, f"per-file-ignores.{_cut(pattern)}", where)
        for code in codes:
            validate_selector(code, f"{where}per-file-ignores.{_cut(pattern)}")
        pfi.append((pattern, codes))
    option_values: dict[str, tuple[str, ...]] = {}
    for key, field in OPTION_KEYS.items():
        if key in table:
            option_values[field] = _string_list(table[key], key, where)
    python = table.get("python")
    if python is not None and not isinstance(python, str):
        raise ConfigError(f"{where}'python' must be the path of an environment or its interpreter, got {quoted(python)}")
    if python:
        python = os.path.normpath(os.path.join(root, python))  # relative to the configuration's folder
    return Config(
        src=tuple(os.path.join(root, r) for r in lists.get("src", ())),
        python=python,
        select=lists.get("select", ()),
        extend_select=lists.get("extend-select", ()),
        ignore=lists.get("ignore", ()) + lists.get("extend-ignore", ()),
        per_file_ignores=tuple(pfi),
        exclude=lists.get("exclude", DEFAULT_EXCLUDE) + lists.get("extend-exclude", ()),
        include=lists.get("include", DEFAULT_INCLUDE) + lists.get("extend-include", ()),
        options=dataclasses.replace(Options(), **option_values,
                                    target_version=_target_version(table, requires_python, where),
                                    min_confidence=min_confidence(table.get("min-confidence", Options().min_confidence),
                                                                  f"{where}'min-confidence'")),
        root=root,
        source=source,
    )


def _target_version(table: dict[str, Any], requires_python: str | None, where: str) -> tuple[int, int]:
    """`target-version` (`"py39"`), else the lowest Python `requires-python` allows,
    else the default."""
    if "target-version" in table:
        value = table["target-version"]
        match = _TARGET_VERSION.fullmatch(value) if isinstance(value, str) else None
        if match is None:
            raise ConfigError(f"{where}'target-version' must be a Python version such as \"py310\", got {quoted(value)}")
        return 3, int(match.group(1))
    minors = [int(m) for m in _REQUIRES_PYTHON.findall(requires_python or "")]
    return (3, min(minors)) if minors else Options().target_version


def min_confidence(value: Any, where: str) -> str:
    """A confidence level: `low` (the audit mode), `medium` or `high`."""
    if value not in LEVELS:
        raise ConfigError(f"{where} must be one of {', '.join(LEVELS)}, got {value!r}")
    return value


def validate_selector(code: str, where: str) -> None:
    """A selector is a code or a code prefix (`DTL`, `DTL1`, `DTL10`, `DTL101`)."""
    if code == "ALL":
        return
    if not code.startswith("DTL") or not any(c.startswith(code) for c in rule_codes()):
        raise ConfigError(f"{where}: unknown rule code or prefix {quoted(code)}")


def _string_list(value: Any, key: str, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}{quoted(key)} must be a list of strings, got {quoted(value)}")
    return tuple(value)
