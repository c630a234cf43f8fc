"""The dtype-lint pytest plugin (entry point ``pytest11: dtype_lint``).

* ``--dtype-guard=raise|warn|off`` (default ``off``) sets what the guards made by the
  ``dtype_guard`` fixture do with a violation: raise inside the model call (failing
  the test), warn, or only record it (``off``: nothing fails, but the violations are
  still listed in the summary and on ``guard.violations``).
* ``@pytest.mark.dtype_policy("mixed_bfloat16", allow=[...])`` gives the policy
  (and the findings to allow) that the ``dtype_guard`` fixture of a marked test checks.
* ``dtype_guard`` is a factory: ``g = dtype_guard(model)`` returns an active guard
  for a torch or Flax model, using the marker's policy (or ``policy=``), its
  ``allow`` (or ``allow=``) and the option's mode; every guard it made is closed at
  teardown, last opened first, all of them even when closing one fails. What a guard
  warns when it closes (it checked none or few of the model's modules) points at the
  test's line that made it, not at this file.
* ``@pytest.mark.min_matmul_bits(16)`` skips a test (fails it with
  ``--dtype-strict``) when the measured float32 matmul precision of the device
  (the lower of input and accumulator bits) is below 16 bits, or when the device
  it names is absent.
* At the end of the session, the violations seen are listed by test, then module path.

Nothing here imports torch or JAX until a test actually uses a marker or the fixture.
"""

from __future__ import annotations

import collections
import sys
import warnings

import pytest

_MODES = {"raise": "raise", "warn": "warn", "off": "record"}
_RECORDS = pytest.StashKey[list]()
_STRICT_FAILURE = pytest.StashKey[str]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("dtype-lint", "dtype-lint runtime checks")
    group.addoption(
        "--dtype-guard", choices=tuple(_MODES), default="off",
        help="what dtype_guard guards do with a violation: raise in the model call, warn, "
             "or off (only record it for the summary). Default: off.",
    )
    group.addoption(
        "--dtype-strict", action="store_true", default=False,
        help="fail, instead of skip, tests marked min_matmul_bits that the device does not meet.",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "dtype_policy(policy, allow=None): the dtype policy (a dtype_lint Policy or text such as "
        "'mixed_bfloat16' or 'p=f32,c=bf16,o=f32') that the dtype_guard fixture checks, and the "
        "findings it allows (check codes, module path globs, module classes).",
    )
    config.addinivalue_line(
        "markers",
        "min_matmul_bits(bits, dtype='float32', framework=None, device=None): skip (fail with "
        "--dtype-strict) when the measured matmul precision of the device is below bits.",
    )
    config.stash[_RECORDS] = []


def _default_device(framework: str) -> str:
    if framework == "torch":
        import torch

        return "cuda:0" if torch.cuda.is_available() else "cpu"
    import jax

    backend = jax.default_backend()
    return f"{backend}:0"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    marker = item.get_closest_marker("min_matmul_bits")
    if marker is None:
        return
    from dtype_lint.runtime.probe import DeviceUnavailableError, default_framework, matmul_precision

    if not marker.args and "bits" not in marker.kwargs:
        raise pytest.UsageError("min_matmul_bits needs the number of bits, e.g. min_matmul_bits(16)")
    bits = int(marker.args[0] if marker.args else marker.kwargs["bits"])
    dtype = marker.kwargs.get("dtype", "float32")  # noqa: DTL102 (the documented default dtype to probe)
    framework = marker.kwargs.get("framework") or default_framework()
    device = marker.kwargs.get("device") or _default_device(framework)
    try:
        measured = matmul_precision(dtype, framework=framework, device=device)
    except DeviceUnavailableError as exc:
        reason = f"min_matmul_bits({bits}): {exc}"
    else:
        if measured.effective_bits >= bits:
            return
        reason = (f"{framework} {dtype} matmul on {device} keeps {measured.effective_bits} bits "
                  f"(input {measured.input_bits}, accumulator {measured.accumulator_bits}), "
                  f"test needs {bits}")
    if not item.config.getoption("--dtype-strict"):
        # A skip marker, evaluated by pytest's own setup right after this hook, reports
        # the test's location rather than this file's.
        item.add_marker(pytest.mark.skip(reason=reason))
        return
    # Failing here would report a setup error; the test itself should fail.
    item.stash[_STRICT_FAILURE] = reason


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    reason = item.stash.get(_STRICT_FAILURE, None)
    if reason is not None:
        pytest.fail(reason, pytrace=False)


@pytest.fixture
def dtype_guard(request: pytest.FixtureRequest):
    """Factory: ``dtype_guard(model, policy=None, allow=None)`` returns an active guard on ``model``.

    The policy and ``allow`` come from the arguments or the test's ``dtype_policy``
    marker; the mode from ``--dtype-guard``. Guards are closed, last opened first, and
    their violations collected for the summary, at teardown; a guard that fails to
    close does not keep the others open, and its error is raised once all are closed.
    """
    from dtype_lint.runtime.guard import guard

    marker = request.node.get_closest_marker("dtype_policy")
    marked = marked_allow = None
    if marker is not None:
        marked = marker.args[0] if marker.args else marker.kwargs.get("policy")
        marked_allow = marker.kwargs.get("allow")
    mode = _MODES[request.config.getoption("--dtype-guard")]
    made = []

    def factory(model, policy=None, allow=None):
        chosen = policy if policy is not None else marked
        if chosen is None:
            raise pytest.UsageError(
                "dtype_guard needs a policy: mark the test with "
                "@pytest.mark.dtype_policy('mixed_bfloat16') or pass policy=")
        active = guard(model, chosen, on_violation=mode,
                       allow=allow if allow is not None else marked_allow)
        active.__enter__()
        caller = sys._getframe(1)
        made.append((active, (caller.f_code.co_filename, caller.f_lineno, caller.f_globals)))
        return active

    yield factory
    records = request.config.stash[_RECORDS]
    failure = None
    closing_warnings = []
    for active, made_at in reversed(made):
        # Closed from pytest's teardown, where no frame is the test's: what the guard
        # warns is caught here and warned again at the line that made the guard.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                active.close()
            except BaseException as exc:  # close the others, then fail with the first error
                failure = failure or exc
        closing_warnings += [(message, made_at) for message in caught]
        records.extend((request.node.nodeid, violation) for violation in active.violations)
    for message, (filename, lineno, module_globals) in closing_warnings:
        # The user's filters (-W, filterwarnings) apply to the warning as warned again.
        warnings.warn_explicit(message.message, message.category, filename, lineno,
                               registry=module_globals.setdefault("__warningregistry__", {}),
                               module_globals=module_globals)
    if failure is not None:
        raise failure


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    records = config.stash.get(_RECORDS, [])
    if not records:
        return
    by_test: dict[str, dict[str, list]] = collections.defaultdict(lambda: collections.defaultdict(list))
    for nodeid, violation in records:
        found = by_test[nodeid][violation.module_path]
        if violation not in found:
            found.append(violation)
    terminalreporter.write_sep("=", "dtype-lint runtime violations")
    for nodeid, by_path in by_test.items():
        terminalreporter.write_line(f"{nodeid}:")
        for path in sorted(by_path):
            terminalreporter.write_line(f"  {path}:")
            for violation in sorted(by_path[path], key=lambda v: (v.code, v.message)):
                text = str(violation)[len(f"{violation.code} {path}: "):]
                times = f" (x{violation.count})" if violation.count > 1 else ""
                terminalreporter.write_line(f"    {violation.code} {text}{times}")
