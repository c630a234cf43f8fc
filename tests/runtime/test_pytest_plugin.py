"""The pytest plugin, run for real in pytester sessions."""

from importlib.metadata import entry_points

import pytest

pytest.importorskip("torch")
# pytester takes back the modules an inner session imported; jaxlib's extension aborts
# the process when it is imported a second time (absl's time zone): imported once here,
# the inner sessions that use Flax find it (as they do when the whole suite runs).
try:
    import jax  # noqa: F401
except ImportError:
    pass

# Here rather than in tests/runtime/conftest.py: pytest refuses pytest_plugins in a
# non-top-level conftest, and a second conftest.py would shadow tests/conftest.py,
# which other test modules import by name.
pytest_plugins = ["pytester"]

# Once the package is installed, pytest loads the plugin through its pytest11 entry
# point; before that (a bare checkout), the inner sessions load it with -p.
_INSTALLED = any(ep.value == "dtype_lint.pytest_plugin" for ep in entry_points(group="pytest11"))
# Unrelated plugins are blocked: hypothesis' summary alone costs seconds per run, and
# pytest-asyncio (which pytest-lsp brings) warns about its settings in every session.
PLUGIN = ("-p", "no:hypothesispytest", "-p", "no:benchmark", "-p", "no:pytest-lsp", "-p", "no:asyncio",
          *(() if _INSTALLED else ("-p", "dtype_lint.pytest_plugin")))

MODELS = '''
import pytest
import torch

class RMSNorm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(4))

    def forward(self, x):
        return self.weight * x.float()

class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = RMSNorm()

    def forward(self, x):
        return self.norm(x).to(x.dtype)
'''


def _write(pytester, body):
    pytester.makepyfile(test_models=MODELS + body)


BODY = '''
@pytest.mark.dtype_policy("bfloat16")
def test_widening(dtype_guard):
    model = Block().to(torch.bfloat16)
    g = dtype_guard(model)
    model(torch.ones(2, 4, dtype=torch.bfloat16))
    assert [v.code for v in g.violations] == ["DTL192"]

@pytest.mark.dtype_policy("float32")
def test_clean(dtype_guard):
    model = torch.nn.Linear(4, 4)
    g = dtype_guard(model)
    model(torch.ones(2, 4))
    assert g.violations == []
'''


def test_default_mode_records_and_summarises(pytester):
    _write(pytester, BODY)
    # --strict-markers: the plugin's markers are registered.
    result = pytester.runpytest(*PLUGIN, "--strict-markers")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([
        "*= dtype-lint runtime violations =*",
        "test_models.py::test_widening:",
        "  norm:",
        "    DTL192 RMSNorm returned float32 from inputs bfloat16 and params bfloat16",
    ])


def test_raise_mode_fails_the_test_and_warn_mode_warns(pytester):
    _write(pytester, BODY)
    result = pytester.runpytest(*PLUGIN, "--dtype-guard=raise")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*DTypeViolationError*DTL192 norm*"])
    result = pytester.runpytest(*PLUGIN, "--dtype-guard=warn", "-W", "always")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*DTypeGuardWarning: DTL192 norm*"])


def test_guards_are_closed_at_teardown_and_policy_is_required(pytester):
    _write(pytester, '''
held = []

@pytest.mark.dtype_policy("p=f32,c=f32,o=f32")
def test_uses(dtype_guard):
    model = torch.nn.Linear(4, 4)
    held.append((model, dtype_guard(model)))
    assert "forward" in model.__dict__

def test_after():
    model, g = held[0]
    assert "forward" not in model.__dict__ and not g.active

def test_unmarked(dtype_guard):
    dtype_guard(torch.nn.Linear(4, 4))

def test_explicit_policy(dtype_guard):
    assert dtype_guard(torch.nn.Linear(4, 4), policy="bf16").policy.compute == "bfloat16"
''')
    result = pytester.runpytest(*PLUGIN)
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*dtype_guard needs a policy*"])


def test_min_matmul_bits_skips_or_fails_with_strict(pytester):
    pytester.makepyfile(test_bits='''
import pytest
import torch

@pytest.mark.min_matmul_bits(16)
def test_needs_16_bits():
    pass

@pytest.mark.min_matmul_bits(8, dtype="bfloat16")
def test_bf16_needs_8():
    pass
''')
    # float32 keeps 23 bits on the CPU; bfloat16 keeps 7, below the 8 required.
    result = pytester.runpytest(*PLUGIN, "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*torch bfloat16 matmul on cpu keeps 7 bits*test needs 8*"])
    result = pytester.runpytest(*PLUGIN, "--dtype-strict")
    result.assert_outcomes(passed=1, failed=1)


def test_raise_mode_stops_the_call_without_a_coverage_warning(pytester):
    # The guard raises in the first of three modules: the two it never reached are the
    # raise's doing, not a fused fast path's.
    _write(pytester, '''
@pytest.mark.dtype_policy("bfloat16")
def test_first_module_widens(dtype_guard):
    model = torch.nn.Sequential(RMSNorm(), torch.nn.Linear(4, 4)).to(torch.bfloat16)
    dtype_guard(model)
    model(torch.ones(2, 4, dtype=torch.bfloat16))
''')
    result = pytester.runpytest(*PLUGIN, "--dtype-guard=raise", "-W", "always")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*DTypeViolationError*DTL192 0: RMSNorm returned float32*"])
    assert "DTypeGuardWarning" not in result.stdout.str()


def test_a_coverage_warning_points_at_the_line_that_made_the_guard(pytester):
    _write(pytester, '''
@pytest.mark.dtype_policy("bfloat16")
def test_never_called(dtype_guard):
    model = Block().to(torch.bfloat16)
    dtype_guard(model)  # the guard's line
''')
    written = (pytester.path / "test_models.py").read_text().splitlines()
    line = next(n for n, text in enumerate(written, 1) if "the guard's line" in text)
    result = pytester.runpytest(*PLUGIN, "-W", "always")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"*test_models.py:{line}: DTypeGuardWarning: dtype guard on Block checked no module*"])
    assert "pytest_plugin.py" not in result.stdout.str()
    # The user's filters apply to it: an error filter fails the test at teardown.
    result = pytester.runpytest(*PLUGIN, "-W", "error::dtype_lint.runtime.DTypeGuardWarning")
    result.assert_outcomes(passed=1, errors=1)



FLAX_TWO = '''
import pytest
import jax
import jax.numpy as jnp
import flax.linen as nn
from flax.linen import module as flax_module

class Widen(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.LayerNorm(name="norm_a")(nn.Dense(4, dtype=jnp.bfloat16)(x))

class Other(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.LayerNorm(name="norm_b")(nn.Dense(3, dtype=jnp.bfloat16)(x))

@pytest.mark.dtype_policy("mixed_bfloat16")
def test_two(dtype_guard):
    x = jnp.ones((2, 4), jnp.bfloat16)
    for model in (Widen(), Other()):
        dtype_guard(model)
        model.apply(model.init(jax.random.key(0), x), x)

def test_after():
    assert len(flax_module._global_interceptor_stack) == 0
'''


def test_fixture_closes_two_flax_guards_and_keeps_their_violations(pytester):
    pytest.importorskip("flax")
    pytester.makepyfile(test_flax=FLAX_TWO)
    result = pytester.runpytest(*PLUGIN)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["test_flax.py::test_two:", "  norm_a:", "    DTL191 LayerNorm returned*",
                                 "  norm_b:", "    DTL191 LayerNorm returned*"])


FLAX_F8 = '''
import pytest
import jax
import jax.numpy as jnp
import flax.linen as nn

class Net(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(4, dtype=jnp.bfloat16, name="proj")(x)

@pytest.mark.dtype_policy("mixed_bfloat16")
def test_f8(dtype_guard):
    x = jnp.ones((2, 4), jnp.bfloat16)
    model = Net()
    variables = jax.tree.map(lambda p: p.astype(jnp.float8_e4m3fn), model.init(jax.random.key(0), x))
    dtype_guard(model)
    model.apply(variables, x)
'''


def test_fixture_reads_float8_and_bfloat16_jax_arrays(pytester):
    pytest.importorskip("flax")
    pytester.makepyfile(test_f8=FLAX_F8)
    result = pytester.runpytest(*PLUGIN)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["test_f8.py::test_f8:", "  proj:", "    DTL391 *float8_e4m3fn*"])


def test_marker_and_fixture_take_allow(pytester):
    _write(pytester, '''
@pytest.mark.dtype_policy("bfloat16", allow=["DTL192"])
def test_marker_allow(dtype_guard):
    model = Block().to(torch.bfloat16)
    g = dtype_guard(model)
    model(torch.ones(2, 4, dtype=torch.bfloat16))
    assert g.violations == []

@pytest.mark.dtype_policy("bfloat16")
def test_fixture_allow(dtype_guard):
    model = Block().to(torch.bfloat16)
    g = dtype_guard(model, allow=[RMSNorm])
    model(torch.ones(2, 4, dtype=torch.bfloat16))
    assert g.violations == []
''')
    result = pytester.runpytest(*PLUGIN, "--dtype-guard=raise")
    result.assert_outcomes(passed=2)


def test_min_matmul_bits_on_an_absent_device_skips_or_fails_with_strict(pytester):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    pytester.makepyfile(test_cuda='''
import pytest

@pytest.mark.min_matmul_bits(10, framework="torch", device="cuda")
def test_on_cuda():
    pass
''')
    result = pytester.runpytest(*PLUGIN, "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*torch has no device 'cuda'*"])
    result = pytester.runpytest(*PLUGIN, "--dtype-strict")
    result.assert_outcomes(failed=1)
