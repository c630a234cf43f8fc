"""The pre-commit hooks, run by the real pre-commit against a throwaway git repository."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory):
    """A committed copy of this project, for `pre-commit try-repo` to install from."""
    repo = tmp_path_factory.mktemp("hooks")
    for name in (".pre-commit-hooks.yaml", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, repo / name)
    shutil.copytree(ROOT / "dtype_lint", repo / "dtype_lint", ignore=shutil.ignore_patterns("__pycache__"))
    git("init", "-q", cwd=repo)
    git("add", ".", cwd=repo)
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "hooks", cwd=repo)
    return repo


def try_repo(hook_repo, work, hook):
    env = dict(os.environ, PRE_COMMIT_HOME=str(hook_repo.parent / "pre-commit-home"))
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), hook, "--all-files"],
        cwd=work, capture_output=True, text=True, env=env, timeout=900,
    )


@pytest.fixture
def work(tmp_path):
    git("init", "-q", cwd=tmp_path)
    return tmp_path


def test_hooks_pass_on_a_commit_without_python_files(hook_repo, work):
    (work / "notes.txt").write_text("no python here\n")
    git("add", ".", cwd=work)
    for hook in ("dtype-lint", "dtype-lint-fix"):
        proc = try_repo(hook_repo, work, hook)
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_check_hook_fails_on_a_hazard_and_fix_hook_fixes(hook_repo, work):
    (work / "mod.py").write_text("import jax\nparams = jax.tree_map(f, params)\n")
    (work / "pyproject.toml").write_text('[tool.dtype-lint]\nextend-select = ["DTL304"]\n')
    git("add", ".", cwd=work)
    proc = try_repo(hook_repo, work, "dtype-lint")
    assert proc.returncode == 1 and "DTL304" in proc.stdout
    proc = try_repo(hook_repo, work, "dtype-lint-fix")
    assert proc.returncode == 1  # pre-commit fails a hook that changed files
    assert (work / "mod.py").read_text() == "import jax\nparams = jax.tree.map(f, params)\n"


def test_the_hooks_lint_and_fix_notebooks(hook_repo, work):
    notebook = ROOT / "fixtures" / "nb_float32.ipynb"
    shutil.copy(notebook, work / "train.ipynb")
    git("add", ".", cwd=work)
    proc = try_repo(hook_repo, work, "dtype-lint")
    assert proc.returncode == 1 and "train.ipynb:cell 3:1:41: DTL101" in proc.stdout, proc.stdout
    git("add", ".", cwd=work)
    proc = try_repo(hook_repo, work, "dtype-lint-fix")
    assert proc.returncode == 1  # DTL101's fix is unsafe: nothing changed, the findings remain
    assert (work / "train.ipynb").read_bytes() == notebook.read_bytes()
