"""Where a Python environment keeps its installed packages, read from its folders and
files: nothing in it is run.

The configured ``python`` is an environment's folder (``.venv``) or a file in it
(``.venv/bin/python``). A virtual environment is the folder holding ``pyvenv.cfg``:
beside the file or one folder up, where CPython's ``site`` looks. Any other
installation (conda, pyenv, a system Python) is the folder whose ``lib/python3.X``
(``Lib`` on Windows) holds its packages, found above the file or above the file its
symbolic link leads to, as CPython finds its prefix.

The search path is the one ``site`` builds, standard library left out: the
environment's ``site-packages`` (and Debian's ``dist-packages``), the user's own
site-packages where the interpreter would add them, a virtual environment's base
installation where ``include-system-site-packages = true``; each folder followed by
the folders its ``.pth`` files name. A ``.pth`` line that starts with ``import`` is code,
which ``site`` runs and this module skips.
"""

from __future__ import annotations

import dataclasses
import os
import re
import stat

from dtype_lint.core.reading import read_small

# pyvenv.cfg and .pth files are a few lines; a larger one is not what it claims to be.
MAX_CONFIG_BYTES = 1024 * 1024
_VERSION = re.compile(r"(\d+)\.(\d+)")
_VERSION_FOLDER = re.compile(r"python(3\.\d+)t?")


@dataclasses.dataclass(frozen=True)
class Found:
    """The search path read, or why there is none (then ``paths`` is empty)."""

    paths: tuple[str, ...]
    problem: str | None = None


def read_environment(path: str) -> Found:
    """The search path of the environment at or around ``path`` (a folder, or a file in
    it such as its interpreter)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        return Found((), f"cannot read it: {getattr(exc, 'strerror', None) or exc}")
    if stat.S_ISDIR(st.st_mode):
        places = [os.path.abspath(path)]
    elif stat.S_ISREG(st.st_mode):
        places = _places(path)
    else:
        return Found((), "neither a folder nor a file (a device or a pipe); never opened")
    for folder in places:
        config = _venv_config(folder)
        if config is not None:
            return Found(_venv_paths(folder, config))
    for folder in places:
        version = _version(folder, os.path.basename(path))
        if version is not None or _windows_layout(folder):
            return Found(_with_pth(_user_site(version) + _site_folders(folder, version)))
    return Found((), "no Python environment there (no pyvenv.cfg, no lib/python3.X or Lib/site-packages)")


def _places(file: str) -> list[str]:
    """Where an interpreter's environment may start: its folder and the one above it
    (``bin/python``, ``Scripts/python.exe``), then the same for the file its symbolic
    link leads to (a system interpreter linked into ``/usr/local/bin``)."""
    places: list[str] = []
    for each in (os.path.abspath(file), os.path.realpath(file)):
        folder = os.path.dirname(each)
        for place in (folder, os.path.dirname(folder)):
            if place not in places:
                places.append(place)
    return places


def _venv_config(folder: str) -> dict[str, str] | None:
    data = read_small(os.path.join(folder, "pyvenv.cfg"), MAX_CONFIG_BYTES)
    if data is None:
        return None
    config = {}
    for line in data.decode("utf-8", "replace").splitlines():
        key, equals, value = line.partition("=")
        if equals:
            config[key.strip().lower()] = value.strip()
    return config


def _venv_paths(prefix: str, config: dict[str, str]) -> tuple[str, ...]:
    """A virtual environment's search path, in ``site``'s order: its own packages, then,
    with the system's packages included, the user's and the base installation's."""
    match = _VERSION.match(config.get("version_info") or config.get("version") or "")
    version = f"{match.group(1)}.{match.group(2)}" if match else _version(prefix, "")
    folders = _site_folders(prefix, version)
    if config.get("include-system-site-packages", "true").lower() == "true":
        home = config.get("home", "")
        base = next((p for p in (os.path.dirname(home), home)
                     if home and (_version(p, "") == version or _windows_layout(p))), None)
        folders += _user_site(version) + (_site_folders(base, version) if base else ())
    return _with_pth(folders)


def _version(prefix: str, name: str) -> str | None:
    """The Python version an installation at ``prefix`` is for: the one of
    ``lib/python3.X`` (there may be several: then the one the interpreter's file name
    gives, else the newest); None if there is no such folder."""
    try:
        found = [m.group(1) for m in map(_VERSION_FOLDER.fullmatch, os.listdir(os.path.join(prefix, "lib")))
                 if m]
    except OSError:
        return None
    named = _VERSION_FOLDER.match(name)
    if named and named.group(1) in found:
        return named.group(1)
    return max(found, key=lambda v: int(v.split(".")[1]), default=None)


def _windows_layout(prefix: str) -> bool:
    return os.path.isdir(os.path.join(prefix, "Lib", "site-packages"))


def _site_folders(prefix: str, version: str | None) -> tuple[str, ...]:
    """An installation's own package folders that exist, in ``site``'s order."""
    posix = version is not None and os.path.isdir(os.path.join(prefix, "lib", f"python{version}"))
    if _windows_layout(prefix) and not posix:
        return prefix, os.path.join(prefix, "Lib", "site-packages")  # site adds the prefix itself there
    if version is None:
        return ()
    candidates = []
    for name in (f"python{version}", f"python{version}t"):
        lib, lib64 = (os.path.join(prefix, d, name, "site-packages") for d in ("lib", "lib64"))
        # A real lib64 beside lib (sys.platlibdir "lib64", Fedora) comes first; a venv's
        # lib64 that links to lib is the same folder.
        if os.path.isdir(lib64) and os.path.realpath(lib64) != os.path.realpath(lib):
            candidates.append(lib64)
        candidates.append(lib)
    # Debian's patched site adds these (and no lib/python3.X/site-packages outside a venv,
    # where that folder does not exist).
    candidates += [os.path.join(prefix, "local", "lib", f"python{version}", "dist-packages"),
                   os.path.join(prefix, "lib", "python3", "dist-packages"),
                   os.path.join(prefix, "lib", f"python{version}", "dist-packages")]
    return tuple(c for c in candidates if os.path.isdir(c))


def _user_site(version: str | None) -> tuple[str, ...]:
    """The user's own site-packages, as ``site`` finds them (this user's: the one who
    runs dtype-lint), where they exist and ``PYTHONNOUSERSITE`` is not set."""
    if version is None or os.environ.get("PYTHONNOUSERSITE"):
        return ()
    base = os.environ.get("PYTHONUSERBASE")
    if os.name == "nt":
        base = base or os.path.join(os.environ.get("APPDATA") or os.path.expanduser("~"), "Python")
        folder = os.path.join(base, f"Python{version.replace('.', '')}", "site-packages")
    else:
        base = base or os.path.expanduser("~/.local")
        folder = os.path.join(base, "lib", f"python{version}", "site-packages")
    return (folder,) if os.path.isdir(folder) else ()


def _with_pth(folders: tuple[str, ...]) -> tuple[str, ...]:
    """The folders, each followed by the folders its ``.pth`` files add, as ``site`` adds
    them: files in name order (hidden ones skipped, as Python 3.13's ``site`` does),
    lines as paths relative to the folder, comments, blank lines and ``import`` lines
    skipped, paths that do not exist left out, each path once."""
    paths: list[str] = []
    known: set[str] = set()

    def add(path: str) -> None:
        path = os.path.abspath(path)
        if os.path.normcase(path) not in known:
            known.add(os.path.normcase(path))
            paths.append(path)

    for folder in folders:
        add(folder)
        try:
            names = sorted(n for n in os.listdir(folder) if n.endswith(".pth") and not n.startswith("."))
        except OSError:
            continue
        for name in names:
            for line in _pth_lines(os.path.join(folder, name)):
                if line.startswith(("import ", "import\t")):
                    continue  # code: site executes it; dtype-lint never does
                path = os.path.join(folder, line.rstrip())
                if os.path.exists(path):
                    add(path)
    return tuple(paths)


def _pth_lines(path: str) -> list[str]:
    data = read_small(path, MAX_CONFIG_BYTES)
    if data is None:
        return []
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("latin-1")  # site falls back to the locale's encoding
    return [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
