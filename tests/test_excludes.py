"""Name-glob exclude patterns are matched as pathspec's GitIgnoreSpec matches them."""

from __future__ import annotations

import subprocess
import sys

import pathspec
from hypothesis import given, settings
from hypothesis import strategies as st

from dtype_lint.project.config import DEFAULT_EXCLUDE
from dtype_lint.project.excludes import Excludes, is_name_glob

_NAME_CHARS = "ab.-_*?"
# Real relative paths (from os.walk) never hold "." or ".." as a name.
names = st.text(alphabet="ab.-_", min_size=1, max_size=4).filter(lambda n: n not in (".", ".."))
globs = st.text(alphabet=_NAME_CHARS, min_size=1, max_size=4).filter(is_name_glob)
patterns = st.lists(st.tuples(globs, st.booleans()).map(lambda t: t[0] + ("/" if t[1] else "")), min_size=1, max_size=4)
paths = st.tuples(st.lists(names, min_size=1, max_size=4), st.booleans()).map(
    lambda t: "/".join(t[0]) + ("/" if t[1] else ""))


@settings(max_examples=500, deadline=None)
@given(patterns, st.lists(paths, min_size=1, max_size=8))
def test_name_globs_match_like_gitignore(chosen: list[str], tried: list[str]) -> None:
    assert all(is_name_glob(p) for p in chosen)
    ours, theirs = Excludes(chosen), pathspec.GitIgnoreSpec.from_lines(chosen)
    for path in tried:
        assert ours.match_file(path) == theirs.match_file(path), (chosen, path)


def test_default_excludes_match_like_gitignore() -> None:
    ours, theirs = Excludes(DEFAULT_EXCLUDE), pathspec.GitIgnoreSpec.from_lines(DEFAULT_EXCLUDE)
    for path in ["venv/", "a/.git/", "pkg.egg-info/", "x/pkg.egg-info/y.py", "src/build/", "src/build.py",
                 "src/mod.py", "node_modules/a.py", "envs/", ".env/", "a/__pycache__/b.py"]:
        assert ours.match_file(path) == theirs.match_file(path), path


def test_other_patterns_go_to_pathspec() -> None:
    for pattern in ["docs/*.py", "/top", "**/gen", "!keep", "[ab]x", "a\\*", " x", "#c"]:
        assert not is_name_glob(pattern)
    spec = Excludes(["docs/*.py", "build"])
    assert spec.match_file("docs/a.py") and spec.match_file("x/build/") and not spec.match_file("src/docs/a.py")


def test_default_configuration_does_not_import_pathspec() -> None:
    code = "import sys; from dtype_lint.project.config import Config; Config().exclude_spec(); sys.exit('pathspec' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 0
