"""Autocast presets, root causes instead of cascades, and allow= on real torch models (CPU)."""

import pytest

from dtype_lint.runtime import DTypeViolationError, Policy, guard

torch = pytest.importorskip("torch")

BF16 = torch.bfloat16


class Block(torch.nn.Module):
    """A pre-norm transformer-style block: the residual stream stays float32 under autocast."""

    def __init__(self, dim=16):
        super().__init__()
        self.norm = torch.nn.LayerNorm(dim)
        self.fc = torch.nn.Linear(dim, dim)
        self.drop = torch.nn.Dropout(0.0)

    def forward(self, x):
        return x + self.drop(self.fc(self.norm(x)))


class TinyViT(torch.nn.Module):
    """Patch embedding, a float32 position embedding added in the model's own code, blocks, head."""

    def __init__(self, dim=16, depth=3):
        super().__init__()
        self.patch = torch.nn.Conv2d(3, dim, 4, 4)
        self.pos = torch.nn.Parameter(torch.zeros(1, 4, dim))
        self.pos_drop = torch.nn.Dropout(0.0)
        self.identity = torch.nn.Identity()
        self.blocks = torch.nn.Sequential(*[Block(dim) for _ in range(depth)])
        self.head = torch.nn.Linear(dim, 10)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2) + self.pos
        return self.head(self.blocks(self.identity(self.pos_drop(x))).mean(1))


def _run(model, policy, **kwargs):
    with guard(model, policy, on_violation="record", **kwargs) as g:
        with torch.autocast("cpu", dtype=BF16):
            model(torch.randn(2, 3, 8, 8))
    return g


def test_presets_parse():
    policy = Policy.parse("autocast_bfloat16")
    assert (policy.params, policy.compute, policy.output, policy.autocast) == ("float32", "bfloat16", "compute", True)
    assert Policy.parse("autocast_float16").compute == "float16"
    assert Policy.parse(str(policy)) == policy
    assert not Policy.parse("mixed_bfloat16").autocast
    with pytest.raises(ValueError, match="autocast= takes on or off"):
        Policy.parse("p=f32,c=bf16,autocast=maybe")


def test_autocast_preset_accepts_what_autocast_produces():
    assert _run(TinyViT(), "autocast_bfloat16").violations == []


def test_mixed_policy_reports_the_root_cause_once_with_its_cascade_counted():
    g = _run(TinyViT(depth=3), "mixed_bfloat16")
    assert sorted((v.code, v.module_path) for v in g.violations) == [("DTL191", "(root)"), ("DTL193", "(root)")]
    cause = next(v for v in g.violations if v.code == "DTL191")
    assert cause.message == ("float32 activations made by TinyViT's own code (outside its submodules) "
                             "enter pos_drop, policy.compute is bfloat16")
    # pos_drop, identity, every block, its norm and the blocks container only passed it on.
    assert set(cause.downstream) == {"pos_drop", "identity", "blocks", "blocks.0", "blocks.1", "blocks.2",
                                     "blocks.0.norm", "blocks.1.norm", "blocks.2.norm"}
    assert str(cause).endswith("... and 9 modules downstream")
    # The dropout is never reported as returning float32 on its own.
    assert not any("Dropout" in v.message for v in g.violations)


def test_pass_through_names_its_input_dtypes():
    inner = torch.nn.Sequential(torch.nn.Identity(), torch.nn.Dropout(0.0))
    with guard(inner, "bfloat16", on_violation="record") as g:
        inner(torch.randn(2, 4))
    (violation,) = g.violations[:1]
    assert violation.message == ("Identity returned float32 activations from inputs float32 "
                                 "(the model's own inputs), policy.compute is bfloat16")
    assert violation.downstream == ("1",)


class NoAutocastHead(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x):
        with torch.autocast("cpu", enabled=False):
            return self.fc(x.float())


class HalfNorm(torch.nn.Module):
    """bf16 weight, bf16 input, float32 out: a widening autocast would not make."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(16, dtype=BF16))

    def forward(self, x):
        return self.weight * x.float()


def test_autocast_preset_still_reports_what_autocast_would_not_produce():
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), NoAutocastHead(), torch.nn.Linear(16, 16), HalfNorm())
    with guard(model, "autocast_bfloat16", on_violation="record") as g:
        with torch.autocast("cpu", dtype=BF16):
            model(torch.randn(2, 16))
    by_path = {v.module_path: v for v in g.violations}
    assert by_path["1.fc"].code == "DTL191"
    assert "autocast lowers Linear" in by_path["1.fc"].message
    assert by_path["3"].code == "DTL192"
    assert by_path["3"].message == "HalfNorm returned float32 from inputs bfloat16 and params bfloat16"
    # The bf16 weight is off policy too; the Linears autocast lowered are not reported.
    assert set(by_path) == {"1.fc", "3"}
    assert [v.code for v in g.violations if v.module_path == "3"] == ["DTL391", "DTL192"]


def test_allow_by_code_path_glob_and_module_type():
    assert [v.code for v in _run(TinyViT(), "mixed_bfloat16", allow=["DTL193"]).violations] == ["DTL191"]
    assert [v.code for v in _run(TinyViT(), "mixed_bfloat16", allow="(root)").violations] == []
    assert [v.code for v in _run(TinyViT(), "mixed_bfloat16", allow=[TinyViT]).violations] == []
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), NoAutocastHead())
    with guard(model, "autocast_bfloat16", allow=["1.*"]) as g:  # raise mode: nothing raised
        with torch.autocast("cpu", dtype=BF16):
            model(torch.randn(2, 16))
    assert g.violations == []
    with pytest.raises(DTypeViolationError):
        with guard(model, "autocast_bfloat16", allow=[torch.nn.Dropout]):
            with torch.autocast("cpu", dtype=BF16):
                model(torch.randn(2, 16))
    with pytest.raises(TypeError, match="allow= takes"):
        guard(model, "float32", allow=[3])


def test_violations_count_calls():
    model = TinyViT()
    with guard(model, "mixed_bfloat16", on_violation="record") as g:
        with torch.autocast("cpu", dtype=BF16):
            for _ in range(3):
                model(torch.randn(2, 3, 8, 8))
    assert [v.count for v in g.violations] == [3, 3]


def test_raise_mode_raises_the_root_cause_and_leaves_nothing_installed():
    model = TinyViT()
    with pytest.raises(DTypeViolationError, match=r"DTL191 \(root\): float32 activations made by TinyViT's own code"):
        with guard(model, "mixed_bfloat16"):
            with torch.autocast("cpu", dtype=BF16):
                model(torch.randn(2, 3, 8, 8))
    assert all("forward" not in m.__dict__ for m in model.modules())
