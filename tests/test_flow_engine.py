"""The flow engine (dtype_lint.core.flow) with each family's configuration (the concepts'), on small
sources: a source reached through an assignment, a branch, a ``self`` attribute and a
function's return, and a sanitizer that stops it.

Each snippet calls ``sink(...)``; :func:`kinds` walks the file as the rules do (the
context's scopes and bindings kept up to date) and asks the engine, at each sink, for
the sources of its first argument.
"""

from __future__ import annotations

import libcst as cst
import pytest

from dtype_lint.core.context import FileContext
from dtype_lint.concepts.float32 import CAST_BACK, FLOAT32, other_dtype
from dtype_lint.concepts.modules import ModulesConfig, modules
from dtype_lint.concepts.parameter_trees import PARAMETER_TREES
from dtype_lint.concepts.unpicklable import PICKLING
from dtype_lint.core.flow.engine import PROPAGATORS, FileFlow, FlowConfig
from dtype_lint.core.traversal import walk
from dtype_lint.core.options import Options

MODULES_MAY = ModulesConfig(ordered=False, propagators=PROPAGATORS)


def _walk(source: str, at_sink) -> FileContext:
    module = cst.parse_module(source)
    ctx = FileContext(module)

    class Probe:
        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name) and node.func.value == "sink":
                at_sink(ctx, node.args[0].value)

    for _ in walk(module.body, [Probe()], enter=(FileContext.ENTER_TYPES, ctx.enter),
                  leave=(FileContext.LEAVE_TYPES, ctx.leave)):
        pass
    return ctx


def kinds(source: str, config: FlowConfig) -> list[list[str]]:
    """For each ``sink(x)`` in order: the kinds of the sources ``x`` may hold."""
    found: list[list[str]] = []
    _walk(source, lambda ctx, expr: found.append([s.kind for s in FileFlow.of(ctx).sources(expr, config)]))
    return found


# -- F2: values pickle cannot store by reference -----------------------------------------


@pytest.mark.parametrize(("source", "expected"), [
    ("def f():\n    fn = lambda x: x\n    sink(fn)", ["a lambda"]),
    ("def f(g):\n    fn = g or (lambda x: x)\n    sink(fn)", ["a lambda"]),
    ("def f(g, c):\n    sink(g if c else (x for x in g))", ["a generator"]),
    ("class A:\n    def __init__(self):\n        self.fn = lambda: 0\n    def run(self):\n        sink(self.fn)",
     ["a lambda"]),
    ("def make():\n    def inner():\n        pass\n    return inner\ndef f():\n    sink(make())",
     ["a local function 'inner' returned by make()"]),
    ("import functools\ndef f():\n    def g():\n        pass\n    sink(functools.partial(g, 1))",
     ["a functools.partial of a local function 'g'"]),
])
def test_pickling_sources(source: str, expected: list[str]) -> None:
    assert kinds(source, PICKLING) == [expected]


@pytest.mark.parametrize("source", [
    "def f(g):\n    sink(g)",  # a parameter: the caller's value
    "def g():\n    pass\ndef f():\n    sink(g)",  # a module-level function: importable
    "import os\ndef f():\n    sink(os.getcwd)",
    "class A:\n    def run(self):\n        sink(self.method)",
])
def test_pickling_sanitizers(source: str) -> None:
    assert kinds(source, PICKLING) == [[]]


# -- F3: modules --------------------------------------------------------------------------


@pytest.mark.parametrize(("source", "expected"), [
    ("import torch.nn as nn\ndef f():\n    m = nn.Linear(2, 2)\n    sink(m)", ["torch.nn.Linear is a torch module"]),
    ("import torch.nn as nn\ndef f(c):\n    m = nn.Linear(2, 2) if c else None\n    sink(m)",
     ["torch.nn.Linear is a torch module"]),
    (("import torch.nn as nn\nclass R:\n    def __init__(self):\n        self.net = nn.Linear(2, 2)\n"
      "    def run(self):\n        sink(self.net)"), ["torch.nn.Linear is a torch module"]),
    ("import torch.nn as nn\ndef make():\n    return nn.Conv2d(1, 1, 1)\ndef f():\n    sink(make())",
     ["torch.nn.Conv2d is a torch module returned by make()"]),
    ("import copy\nimport torch.nn as nn\ndef f():\n    m = nn.Linear(2, 2)\n    sink(copy.deepcopy(m).cuda())",
     ["a copy of a module (torch.nn.Linear is a torch module)"]),
    ("import torch.nn as nn\nclass M(nn.Module):\n    def run(self):\n        sink(self)", ["'self' is a module here"]),
])
def test_modules_sources(source: str, expected: list[str]) -> None:
    assert kinds(source, MODULES_MAY) == [expected]


@pytest.mark.parametrize("source", [
    "class Plain:\n    def run(self):\n        sink(self)",  # `self` of a class that is not a module
    "import torch\ndef f():\n    x = torch.zeros(2)\n    sink(x)",
])
def test_modules_sanitizers(source: str) -> None:
    assert kinds(source, MODULES_MAY) == [[]]


def test_modules_ordered_reading_follows_the_binding_in_force() -> None:
    """The rules' reading: the binding that holds at the sink, not every value."""
    source = ("import torch\nimport torch.nn as nn\ndef f():\n    m = nn.Linear(2, 2)\n    sink(m)\n"
              "    m = torch.zeros(2)\n    sink(m)")
    assert kinds(source, ModulesConfig()) == [["torch.nn.Linear is a torch module"], []]
    assert kinds(source, MODULES_MAY) == [["torch.nn.Linear is a torch module"]] * 2


def test_module_reason_keeps_its_reasons() -> None:
    """Modules.reason asks the engine with the modules configuration."""
    source = ("import copy\nimport torch.nn as nn\ndef f(x, enc: nn.Module):\n    m = nn.Linear(2, 2)\n"
              "    ema = copy.deepcopy(m)\n    sink(ema)\n    sink(m.to('cuda'))\n    sink(enc)\n    sink(x)\n")
    found: list[str | None] = []
    _walk(source, lambda ctx, expr: found.append(modules(ctx, Options()).reason(expr)))
    assert found == ["a copy of a module (torch.nn.Linear is a torch module)", "torch.nn.Linear is a torch module",
                     "torch.nn.Module is a torch module", None]


@pytest.mark.parametrize(("source", "expected"), [
    ("def f(m):\n    sd = m.state_dict()\n    sink(sd)", [["'sd' names parameters or state"]]),
    ("import torch\ndef f(path):\n    blob = torch.load(path)\n    sink(blob.items())",
     [["load() returns parameters or state"]]),
    ("def f(m):\n    acts = m.cache()\n    sink(acts)", [[]]),
])
def test_parameter_trees(source: str, expected: list[list[str]]) -> None:
    """DTL302's question (Roles.parameter_dict): a dict of a model's parameters or state."""
    assert kinds(source, PARAMETER_TREES) == expected


# -- F1: float32 -------------------------------------------------------------------------


@pytest.mark.parametrize(("source", "expected"), [
    ("import torch\ndef f(x):\n    dt = torch.float32\n    sink(dt)", ["float32 (torch.float32)"]),
    ("import torch\ndef f(x, dtype):\n    sink(dtype or torch.float32)", ["float32 (torch.float32)"]),
    ("import numpy as np\ndef f(x, c):\n    sink(x.astype('float16' if c else np.float32))",
     ["a value cast to float32 (np.float32)"]),
    (("import torch\nclass L:\n    def __init__(self):\n        self.dt = torch.float32\n"
      "    def forward(self, x):\n        sink(x.to(self.dt))"), ["a value cast to float32 (torch.float32)"]),
    ("import jax.numpy as jnp\ndef pick():\n    return jnp.float32\ndef f():\n    sink(pick())",
     ["float32 (jnp.float32) returned by pick()"]),
    ("import torch\ndef f(x):\n    y = x.float()\n    sink(y.to('cuda'))", ["a .float() cast"]),
    ("import torch\ndef f(n):\n    dt = torch.float\n    sink(torch.zeros(n, dtype=dt))",
     ["a value made in float32 (torch.float)"]),
])
def test_float32_sources(source: str, expected: list[str]) -> None:
    assert kinds(source, FLOAT32) == [expected]


@pytest.mark.parametrize("source", [
    "import torch\ndef f(x, z):\n    y = x.to(torch.float32)\n    sink(y.to(z.dtype))",  # cast to another's dtype
    "import torch\ndef f(x, z):\n    y = x.to(torch.float32)\n    sink(y.type_as(z))",
    "import torch\ndef f(x):\n    y = x.to(torch.float32)\n    sink(y > 0)",  # a boolean result
    "import torch\ndef f(x):\n    y = x.to(torch.float32)\n    sink(y.long())",  # an integer result
    "import torch\ndef f(x, z):\n    dt = z.dtype\n    sink(x.to(dt))",
])
def test_float32_sanitizers(source: str) -> None:
    assert kinds(source, FLOAT32) == [[]]


def test_cast_back_reads_the_binding_in_force() -> None:
    """CAST_BACK (the float32 rules' cast-back test) reads one binding, as it holds at the
    sink; FLOAT32 reads every value."""
    source = "import torch\ndef f(x):\n    dt = x.dtype\n    sink(dt)\n    dt = torch.float32\n"
    held: list[list[bool]] = []

    def at_sink(ctx: FileContext, expr: cst.BaseExpression) -> None:
        flow = FileFlow.of(ctx)
        held.append([other_dtype(v, flow) for v in flow.values(expr, CAST_BACK)])

    _walk(source, at_sink)
    assert held == [[True]]
    assert kinds(source, FLOAT32) == [["float32 (torch.float32)"]]


def test_answers_are_kept_per_configuration() -> None:
    """One expression, asked under two configurations: each gets its own answer."""
    source = "import torch\ndef f(c):\n    v = (lambda: 0) if c else torch.float32\n    sink(v)"
    assert kinds(source, PICKLING) == [["a lambda"]]
    found: list[tuple[list[str], list[str]]] = []

    def both(ctx: FileContext, expr: cst.BaseExpression) -> None:
        flow = FileFlow.of(ctx)
        found.append(([s.kind for s in flow.sources(expr, PICKLING)], [s.kind for s in flow.sources(expr, FLOAT32)]))

    _walk(source, both)
    assert found == [(["a lambda"], ["float32 (torch.float32)"])]


def test_a_source_keeps_where_it_was_made_and_a_factorys_lambda_is_found_there():
    source = ("class DM:\n    def make(self):\n        return lambda x: x\n\n"
              "    def closure(self, f):\n        def inner():\n            return f()\n\n"
              "        return inner\n\n"
              "    def load(self):\n        fn = self.make()\n        sink(fn)\n        sink(self.closure(print))\n")
    found = []
    _walk(source, lambda ctx, arg: found.extend(FileFlow.of(ctx).sources(arg, PICKLING)))
    made, closure = found
    assert made.returned and isinstance(made.made, cst.Lambda) and made.at is made.made
    assert isinstance(made.node, cst.Name)  # where it enters the sink: `fn`
    # A closure a factory builds from its arguments stays where it enters the sink.
    assert closure.returned and isinstance(closure.made, cst.FunctionDef) and closure.at is closure.node


def test_one_finding_a_place_when_a_factorys_lambda_reaches_several_sinks(cli):
    from conftest import FIXTURES

    path = FIXTURES / "dtl204_unpicklable_callable_on_module_factories.py"
    lines = [f["line"] for f in cli("check", str(path), "--no-cache", "--output-format", "json").json()]
    assert len(lines) == len(set(lines)) == 3
