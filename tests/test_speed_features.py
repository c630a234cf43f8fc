"""The speed features change how much work a run does, never what it reports.

Prefilter on and off, one process and two, cold and warm cache: the output must be the
same, byte for byte. No timings are asserted here; benchmarks/speed.py measures them.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import FIXTURES, fixture_files
from dtype_lint.project import file_lint
from dtype_lint.project.config import Config
from dtype_lint.core.engine import LintError, lint_source
from dtype_lint.core.options import Options
from dtype_lint.rules.registry import RULES, RULES_BY_CODE

ALL = Config(select=("ALL",))


def both_ways(text: str, rules=None, options: Options = Options(min_confidence="low")) -> tuple[list, list]:
    """Findings (with their fixes, as JSON) with the prefilter on and off, at every confidence."""
    rules = rules or ALL.rules()
    got = []
    for on in (True, False):
        try:
            got.append([f.as_json() for f in lint_source(text, "t.py", rules, options, use_prefilter=on)])
        except LintError as exc:
            got.append([str(exc)])
    return got[0], got[1]


@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: p.name)
def test_prefilter_keeps_every_fixture_finding(path):
    on, off = both_ways(path.read_text(encoding="utf-8"))
    assert on == off and on


EXAMPLES = [(rule, code) for rule in RULES for code in rule.valid + tuple(e.code for e in rule.invalid)]


@pytest.mark.parametrize(("rule", "code"), EXAMPLES, ids=lambda v: getattr(getattr(v, "doc", None), "code", ""))
def test_prefilter_keeps_every_rule_example(rule, code):
    for rules in ((rule,), None):  # the rule alone, and with every other rule
        on, off = both_ways(code, rules)
        assert on == off


TRICKY = {
    # A layer class inside a function, named like a top-level one (hypothesis found it):
    # the nested class's plain float32 attribute is found there too.
    "layer class inside a function": "import torch\nfrom torch import nn\n\n\nclass Norm(nn.Module):\n"
                                     "    def __init__(self, m):\n        super().__init__()\n"
                                     "        self.m = torch.tensor(m, dtype=torch.float32)\n\n"
                                     "    def forward(self, x):\n        return x - self.m.to(x.device)\n\n\n"
                                     "def _wrapped(self, x):\n    class Norm(nn.Module):\n"
                                     "        def __init__(self, m):\n            super().__init__()\n"
                                     "            self.m = torch.tensor(m, dtype=torch.float32)\n\n"
                                     "        def forward(self, x):\n            return x - self.m.to(x.device)\n",
    "alias of the dtype": "from torch import float32 as f32\n\n\ndef other():\n    pass\n\n\n"
                          "def f(x, dtype=f32):\n    return x\n",
    "alias of a module": "import jax\nimport jax.tree as jt\nimport jax.numpy as jnp\n\n"
                         "params = jt.map(lambda x: x.astype(jnp.bfloat16), params)\n",
    "bare float imported from torch": "from torch import float\n\n\ndef f(x, dtype=float):\n    return x\n",
    "pool bound far away": "import multiprocessing as mp\nctx = mp.get_context('spawn')\npool = ctx.Pool(2)\n"
                           "other = pool\n\n\ndef unrelated():\n    return 1\n\n\nother.imap(lambda x: x, [1])\n",
    "multi-line strings at column 0": 'DOC = """\ndef f(x, dtype=torch.float32):\nclass A(nn.Module):\n"""\n'
                                      "import torch\n\n\ndef g(x, dtype=torch.float32):\n    s = '''\n"
                                      "def h(dtype=torch.float32): ...\n'''\n    return s\n",
    "base class far away": "import torch\nimport torch.nn as nn\n\n\nclass Base(nn.Module):\n    pass\n\n\n"
                           "def unrelated():\n    pass\n\n\nclass Layer(Base):\n    '''float32 in a docstring'''\n\n"
                           "    size = 3\n\n    def setup(self):\n        pass\n\n"
                           "    def forward(self, x):\n        return x + torch.zeros(3, dtype=torch.float32)\n",
    "dataset class far away": "from torch.utils.data import Dataset\n\n\nclass Items(Dataset):\n    pass\n\n\n"
                              "class MoreItems(Items):\n    pass\n\n\nds = MoreItems([1], lambda x: x)\n",
    "cast helper by name": "import jax\nimport jax.numpy as jnp\n\n\ndef cast(x):\n    return x.astype(jnp.bfloat16)\n\n\n"
                           "def unrelated():\n    pass\n\n\nparams = jax.tree_util.tree_map(cast, params)\n",
    "local function sent to spawn": "import torch.multiprocessing as mp\n\n\ndef main():\n"
                                    "    def worker(rank):\n        pass\n    mp.spawn(worker, nprocs=2)\n",
    "lambda bound at module level": "import multiprocessing\nf = lambda: None\n\n\n"
                                    "multiprocessing.Process(target=f).start()\n",
    "shared lines and decorators": "import torch; import torch.nn as nn\n\n\nclass L(nn.Module):\n"
                                   "    x = 1; y = 2\n\n    @staticmethod\n    @other\n"
                                   "    def forward(x, dtype=torch.float32):\n        return x.to(torch.float32)\n",
    "code beside docstrings": 'import torch\n\n\ndef f(x,\n      dtype=torch.float32): """doc"""; y = 1\n\n\n'
                              'def g(x):\n    """doc"""; d = m.get(k, torch.float32)\n    return d\n',
    "one-line class": "import torch\nclass C: dtype = torch.float32\nd = m.get(k, torch.float32)\n",
    "noqa and fixes": "import jax\nimport torch\n\n\ndef unrelated():\n    pass\n\n\n"
                      "def f(x, dtype=torch.float32):  # noqa: DTL101\n    return jax.tree_map(g, x)\n\n\n"
                      "def g(x, dtype=torch.float32):\n    return x\n",
    "unicode before columns": "import torch\n\n\ndef f(é, dtype=torch.float32, ü='ß'):\n    return é\n",
    "crlf line ends": "import torch\r\n\r\n\r\ndef f(x, dtype=torch.float32):\r\n    return x\r\n",
    "no final newline": "import torch\n\n\ndef f(x, dtype=torch.float32):\n    return x",
    "syntax error elsewhere": "import torch\n\n\ndef f(x, dtype=torch.float32):\n    return x\n\n\ndef g(:\n    pass\n",
    "nothing to find": "import os\n\n\ndef f(x):\n    return os.path.join(x, 'y')\n",
    # DTL303's shape follows names through the file's imports, classes and bindings.
    "module bound at module level": "import torch.nn as nn\nencoder = nn.Linear(2, 2)\n\n\ndef unrelated():\n"
                                    "    pass\n\n\ndef prep():\n    encoder.half()\n",
    "module class renamed on import": "from torch.nn import Linear as Lin\n\n\ndef f():\n    layer = Lin(2, 2)\n"
                                      "    layer.half()\n",
    "module rebound to itself before a cast": "import torch\n\n\ndef f(device):\n    model = build_model()\n"
                                              "    model = model.to(device)\n    model = model.to(device)\n"
                                              "    model.to(torch.float16)\n",
    "module through a chain of names": "import torch.nn as nn\n\n\ndef f(m: nn.Module):\n    a = m\n    b = a\n"
                                       "    b.half()\n",
    "module of a class far away": "import torch\nimport torch.nn as nn\n\n\nclass Block(nn.Module):\n    pass\n\n\n"
                                  "def unrelated():\n    pass\n\n\ndef f():\n    Block().to(torch.bfloat16)\n",
    "parameter class renamed on import": "import torch\nfrom torch.nn import Parameter as P\n\n\n"
                                         "class E(torch.nn.Module):\n    def cast(self):\n"
                                         "        self.w = P(self.w.half())\n",
    "parameter replaced by keyword": "import torch\n\n\nclass E(torch.nn.Module):\n    def cast(self):\n"
                                     "        self.w = torch.nn.Parameter(data=self.w.half())\n",
    # DTL103's shape drops a forward only where the rule certainly finds a cast back.
    "cast back in another method": "import torch\nimport torch.nn as nn\n\n\nclass L(nn.Module):\n"
                                   "    def other(self, x):\n        return x.to(x.dtype)\n\n"
                                   "    def forward(self, x):\n        return x + torch.zeros(3, dtype=torch.float32)\n",
    "float32 renamed like a dtype": "from torch import float32 as f32_dtype\nimport torch.nn as nn\n\n\n"
                                    "class L(nn.Module):\n    def forward(self, x):\n        return x.to(f32_dtype)\n",
    # DTL101 alone keeps a function's header only, unless its body can hold a finding.
    "dtype default in a lambda inside": "import torch\n\n\ndef outer(dtype=torch.float32):\n"
                                         "    f = lambda x, dtype=torch.float32: x\n    return f\n",
    "renamed dtype default in a lambda inside": "from torch import float32 as F\n\n\ndef outer(dtype=F):\n"
                                                "    f = lambda x, dtype=F: x\n    return f\n",
    # DTL102: LibCST nests `a or b or c` and counts keywords as arguments.
    "fallback inside an or chain": "import torch\n\n\ndef f(d):\n    return d or torch.float32 or None\n",
    "get with a keyword default": "import torch\n\n\ndef f(m, k):\n    return m.get(k, default=torch.float32)\n",
    # DTL103 asks which frameworks the whole file imports, function-level imports
    # included, not what the prefilter kept (found by Hypothesis).
    "jax imported inside a function of a torch file": "import torch\n\n\ndef _wrapped(self, x):\n"
                                                       "    import jax.numpy as jnp\n\n    class L(nn.Module):\n"
                                                       "        def __call__(self, x):\n"
                                                       "            return x.astype(jnp.float32) * 2\n",
}


@pytest.mark.parametrize("name", sorted(TRICKY))
def test_prefilter_keeps_findings_in_tricky_files(name):
    on, off = both_ways(TRICKY[name])
    assert on == off


def test_tricky_files_have_findings_to_keep():
    # The synthetic files are only a test of the prefilter if they hold findings.
    hazards = [n for n in TRICKY if n not in ("nothing to find", "syntax error elsewhere")]
    for name in hazards:
        on, _ = both_ways(TRICKY[name])
        assert on, name


def test_prefilter_skips_parsing_what_cannot_hold_a_finding(monkeypatch):
    from dtype_lint.core import prefilter

    reduced = prefilter.reduce_source(TRICKY["base class far away"], ALL.rules(), Options())
    assert reduced is not None and "def unrelated" not in reduced.text and "def setup" not in reduced.text
    assert "class Base(nn.Module)" in reduced.text and "def forward" in reduced.text
    assert prefilter.reduce_source(TRICKY["nothing to find"], [RULES_BY_CODE["DTL101"], RULES_BY_CODE["DTL201"]], Options()).text == ""


def test_a_tensor_rebound_to_itself_is_not_taken_for_a_module():
    # `x = x.to(...)` loops back to the same name: DTL303's shape follows it once, so a
    # function that only moves and casts tensors is not parsed for that rule.
    from dtype_lint.core import prefilter

    text = ("import torch\n\n\ndef prepare(image, latents, device):\n    image = image.to(device)\n"
            "    image = image.to(device, dtype=torch.float16)\n    latents = image.to(device)\n"
            "    noise = latents.to(device)\n    return noise.to(torch.float16)\n")
    reduced = prefilter.reduce_source(text, [RULES_BY_CODE["DTL303"]], Options())
    assert reduced is not None and reduced.text == ""


def test_a_class_named_like_a_pool_is_not_followed():
    # DTL201 follows names bound to a `Pool`, but as a whole word: a model output class
    # (`...WithPooling`) does not make every unit that mentions it lose its shape checks.
    from dtype_lint.core import prefilter

    text = ("import torch\nfrom transformers.modeling_outputs import BaseModelOutputWithPooling\n\n\n"
            "class VisionOutput(BaseModelOutputWithPooling):\n    pass\n\n\n"
            "def encode(pixels):\n    out = VisionOutput(4)\n    key = lambda p: p.sum()\n"
            "    return out.imap(key, pixels)\n")
    rules = [RULES_BY_CODE["DTL201"], RULES_BY_CODE["DTL303"]]
    reduced = prefilter.reduce_source(text, rules, Options())
    assert reduced is not None and "def encode" not in reduced.text
    pooled = text.replace("BaseModelOutputWithPooling", "Pool").replace("transformers.modeling_outputs",
                                                                         "multiprocessing")
    reduced = prefilter.reduce_source(pooled, rules, Options())
    assert reduced is not None and "def encode" in reduced.text


ATTENTION = ("import torch\nimport torch.nn as nn\n\n\ndef eager_attention(module, q):\n"
             "    return torch.softmax(q, -1, dtype=torch.float32)\n\n\n"
             "class Attn(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
             "        self.scale = torch.ones(3, dtype=torch.float32)\n\n"
             "    def forward(self, q):\n        attention = eager_attention\n        return attention(self, q)\n")


@pytest.mark.parametrize("text, kept", [
    (ATTENTION, False),
    (ATTENTION.replace("attention = eager_attention\n        return attention(", "return eager_attention("), True),
    (ATTENTION.replace("attention = eager_attention\n        return attention(",
                       "return (eager_attention  # a comment\n                )("), True),
])
def test_the_forward_path_is_worked_out_only_for_functions_the_file_calls(monkeypatch, text, kept):
    # DTL103's shape asks the layer facts (a walk of the whole file) whether a function
    # pinning float32 is on a forward path only where the text may call it by name.
    from dtype_lint.concepts import layer_facts
    from dtype_lint.core import prefilter

    built = []
    monkeypatch.setattr(layer_facts, "_MEMO", type(layer_facts._MEMO)())
    monkeypatch.setattr(layer_facts.LayerFacts, "__init__", _counting(layer_facts.LayerFacts.__init__, built))
    reduced = prefilter.reduce_source(text, [RULES_BY_CODE["DTL103"]], Options())
    assert reduced is not None and ("def eager_attention" in reduced.text) is kept
    assert bool(built) is kept
    assert both_ways(text)[0] == both_ways(text)[1]


def _counting(function, calls: list):
    def counted(*args, **kwargs):
        calls.append(args)
        return function(*args, **kwargs)

    return counted


def test_layer_facts_find_imports_at_any_depth_first_one_winning():
    # The layer facts read imports from the statements alone (not a walk of every node):
    # inside functions, branches, handlers and match cases, the file's first import of a
    # name winning, as before.
    import ast

    from dtype_lint.concepts.layer_facts import LayerFacts

    text = ("import numpy as np\n\n\ndef f():\n    import jax.numpy as np\n    import flax.linen as nn\n\n\n"
            "try:\n    pass\nexcept ImportError:\n    from torch import nn as tnn\n\n\n"
            "match x:\n    case 1:\n        import optax as ox\n")
    aliases = LayerFacts(ast.parse(text), frozenset(), ()).aliases
    assert aliases == {"np": "numpy", "nn": "flax.linen", "tnn": "torch.nn", "ox": "optax"}


@pytest.mark.parametrize("text, name, called", [
    ("class A(B):\n    def __init__(self):\n        super().__init__()\n        B.__init__(self)\n",
     "__init__", False),
    ("def f(x):\n    pass\ng = f\n", "f", False),
    ("def f(x):\n    pass\ny = self .f  # why\n(1)\n", "f", True),
    ("def f(x):\n    pass\ny = (self.f)(1)\n", "f", True),
    ("def f(x):\n    pass\ny = (self).f(1)\n", "f", True),
    ("def f(x):\n    pass\ny = other.f(1)\n", "f", False),
    ("def f(x):\n    pass\ny = f \\\n  (1)\n", "f", True),
    ("def f(x):\n    pass\ns = 'f()'\n", "f", True),
    ("def f(x):\n    pass\ng = get(key, f\n)\n", "f", False),
    ("def f(x):\n    pass\ng = ((f)\n)(1)\n", "f", True),
    ("def f(x):\n    pass\ng = xf(1) + f_(2)\n", "f", False),
])
def test_may_call_errs_only_towards_a_call(text, name, called):
    from dtype_lint.core.shapes import may_call

    assert may_call(text, name, called=True) is called


@pytest.mark.parametrize("text, keys", [
    ("model.eval()\n", {"model"}),
    ("self.net.cuda().to(device, non_blocking=True).train(True)\n", {"net"}),
    ("ema_model .requires_grad_(False) . parameters ()\n", {"ema_model"}),
    ("teacher.to(f(x)).eval()\n", set()),  # nested parentheses end the chain
    ("wrapped = DDP(self.encoder)\nopt = make(torch.compile(net).parameters())\n", {"encoder", "net"}),
    ("x.view(2).eval\nmodel_eval()\n", set()),
    ("big_model.named_modules()\nsmall.state_dict()\n", {"big_model", "small"}),
])
def test_module_receivers_read_from_the_text(text, keys):
    from dtype_lint.concepts.modules import _module_keys, key_of

    assert _module_keys(text) == {key_of(k) for k in keys}


# Pieces that hold findings or look like it; mixed, they put what a rule resolves (an
# alias, a binding, a class, a cast back) in other units than the hazard.
PIECES = sorted({*(code for _, code in EXAMPLES), *TRICKY.values()} - {TRICKY["crlf line ends"]})


@st.composite
def mixed_files(draw) -> str:
    parts = []
    for piece in draw(st.lists(st.sampled_from(PIECES), min_size=2, max_size=5)):
        piece = piece if piece.endswith("\n") else piece + "\n"
        wrap = draw(st.sampled_from(("", "function", "method")))
        if wrap == "function":
            piece = "def _wrapped(self, x):\n" + textwrap.indent(piece, "    ")
        elif wrap == "method":
            piece = "class _Wrapped(nn.Module):\n    def forward(self, x):\n" + textwrap.indent(piece, "        ")
        parts.append(piece)
    return "\n".join(parts)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed_files())
def test_prefilter_keeps_findings_in_mixed_files(text):
    on, off = both_ways(text)
    assert on == off


def test_a_dtype_default_alone_keeps_only_the_header():
    from dtype_lint.core import prefilter

    plain = "import torch\n\n\ndef g(x, dtype=torch.float32):\n    y = x + 1\n    return y\n"
    reduced = prefilter.reduce_source(plain, [RULES_BY_CODE["DTL101"]], Options())
    assert reduced is not None and "def g(x, dtype=torch.float32):" in reduced.text
    assert "y = x + 1" not in reduced.text and reduced.text.endswith("    pass\n")
    # A body that may hold a finding of its own, seen directly or through an alias, stays.
    for name in ("dtype default in a lambda inside", "renamed dtype default in a lambda inside"):
        reduced = prefilter.reduce_source(TRICKY[name], [RULES_BY_CODE["DTL101"]], Options())
        assert reduced is not None and "lambda x, dtype=" in reduced.text, name


# -- the CLI: jobs and cache ---------------------------------------------------------


@pytest.fixture
def tree(tmp_path):
    """A project: every fixture, a file that does not parse, and a clean one."""
    project = tmp_path / "project"
    project.mkdir()
    for path in fixture_files():
        shutil.copy(path, project / path.name)
    (project / "broken.py").write_text("def f(:\n    pass\n")
    (project / "clean.py").write_text("import os\n")
    (project / "pyproject.toml").write_text('[tool.dtype-lint]\nextend-select = ["DTL304"]\n')
    return project


def check(cli, project: Path, *args: str):
    result = cli("check", str(project), "--output-format", "json", *args, cwd=project)
    return result.code, result.out, result.err


def test_two_jobs_report_exactly_what_one_does(cli, tree):
    one = check(cli, tree, "-j", "1", "--no-cache")
    two = check(cli, tree, "-j", "2", "--no-cache")
    assert one == two
    code, out, err = two
    assert code == 2 and "broken.py" in err and json.loads(out)  # the others are still linted


def test_the_prefilter_flag_changes_nothing(cli, tree):
    assert check(cli, tree, "--no-cache", "-j", "1") == check(cli, tree, "--no-cache", "-j", "1", "--no-prefilter")


def test_a_warm_run_lints_nothing_and_reports_the_same(cli, tree, monkeypatch):
    cold = check(cli, tree, "-j", "1")
    cache = tree / ".dtype_lint_cache"
    assert (cache / ".gitignore").read_text().splitlines()[-1] == "*"
    linted = []
    real = file_lint.lint_path
    monkeypatch.setattr(file_lint, "lint_path", lambda path, config: linted.append(path) or real(path, config))
    assert check(cli, tree, "-j", "1") == cold
    assert linted == [str(tree / "broken.py")]  # a file that does not parse is tried again


def test_an_edited_file_is_linted_again(cli, tree):
    check(cli, tree, "-j", "1")
    target = tree / "dtl101_float32_dtype_default.py"
    target.write_text(target.read_text() + "\n\ndef added(x, dtype=torch.float32): ...\n")
    _, out, _ = check(cli, tree, "-j", "1")
    last = len(target.read_text().splitlines())
    assert any(f["path"].endswith(target.name) and f["line"] == last for f in json.loads(out))
    assert check(cli, tree, "-j", "1") == check(cli, tree, "--no-cache")


def test_a_config_change_relints_every_file(cli, tree):
    _, before, _ = check(cli, tree, "-j", "1")
    pyproject = tree / "pyproject.toml"
    pyproject.write_text('[tool.dtype-lint]\nextend-select = ["DTL304"]\nignore = ["DTL1"]\n')
    _, ignored, _ = check(cli, tree, "-j", "1")
    assert ignored != before and not any(f["code"].startswith("DTL1") for f in json.loads(ignored))
    pyproject.write_text('[tool.dtype-lint]\nextend-select = ["DTL304"]\n')
    assert check(cli, tree, "-j", "1")[1] == before


def test_a_corrupt_cache_entry_is_ignored(cli, tree):
    cold = check(cli, tree, "-j", "1")
    entries = [p for p in (tree / ".dtype_lint_cache").rglob("*.json")]
    assert entries
    for number, entry in enumerate(entries):
        entry.write_bytes([b"", b"{not json", b'{"findings": [[1, 2]]}', b"[]", b"\xff\xfe"][number % 5])
    assert check(cli, tree, "-j", "1") == cold
    assert check(cli, tree, "-j", "1") == cold  # and the entries were rewritten


def test_cache_dir_and_no_cache(cli, tree, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    first = check(cli, tree, "--cache-dir", str(elsewhere))
    assert (elsewhere / ".gitignore").is_file() and not (tree / ".dtype_lint_cache").exists()
    assert check(cli, tree, "--no-cache") == first
    assert not (tree / ".dtype_lint_cache").exists()


def test_fixes_from_a_warm_cache_are_applied(cli, tree):
    check(cli, tree, "-j", "1", "--unsafe-fixes", "--diff")
    check(cli, tree, "-j", "1")
    target = tree / "dtl304_removed_jax_tree_alias.py"
    before = target.read_text()
    cli("check", str(target), "--fix", "--unsafe-fixes", cwd=tree)
    assert target.read_text() != before
    fresh = tree.parent / "fresh"
    fresh.mkdir()
    shutil.copy(FIXTURES / target.name, fresh / target.name)
    shutil.copy(tree / "pyproject.toml", fresh / "pyproject.toml")
    cli("check", str(fresh / target.name), "--fix", "--unsafe-fixes", "--no-cache", cwd=fresh)
    assert target.read_text() == (fresh / target.name).read_text()
