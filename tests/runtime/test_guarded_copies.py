"""A guarded torch model pickles, deep-copies and torch.saves, and the guard goes on reporting."""

import copy
import io
import pickle

import pytest

from dtype_lint.runtime import guard

torch = pytest.importorskip("torch")

BF16 = torch.bfloat16


class Widening(torch.nn.Module):
    """Returns float32 from bfloat16 inputs: DTL192 under a bfloat16 policy."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.proj(x).float()


def _model():
    return torch.nn.Sequential(torch.nn.Linear(4, 4), Widening()).to(BF16)  # noqa: DTL303 (test model)


def _plain(model):
    return all("forward" not in m.__dict__ for m in model.modules())


def _violations_after_a_call(g, model):
    before = len(g.violations)
    model(torch.ones(2, 4, dtype=BF16))
    return g.violations[before:]


@pytest.mark.parametrize("how", ["deepcopy", "copy", "pickle", "torch.save"])
def test_a_copy_taken_under_the_guard_is_the_unguarded_model(how):
    model = _model()
    x = torch.ones(2, 4, dtype=BF16)
    with guard(model, "bfloat16", on_violation="record") as g:
        assert not _plain(model)
        if how == "deepcopy":
            clone = copy.deepcopy(model)
        elif how == "copy":
            clone = copy.copy(model)
        elif how == "pickle":
            clone = pickle.loads(pickle.dumps(model))
        else:
            buffer = io.BytesIO()
            torch.save(model, buffer)
            buffer.seek(0)
            clone = torch.load(buffer, weights_only=False)
        if how != "copy":  # a shallow copy shares its submodules, which the guard still wraps
            assert _plain(clone)
        assert "forward" not in clone.__dict__
        # The copy computes what the model computes and reports nothing of its own...
        seen = len(g.violations)
        assert torch.equal(clone(x), model(x))
        # ...while the guard still reports the original, after the copy too.
        assert [v.code for v in g.violations[seen:]] == ["DTL192", "DTL193"]
    assert _plain(model) and _plain(clone)


def test_an_ema_copy_is_not_watched_and_closing_leaves_both_plain():
    model = _model()
    with guard(model, "bfloat16", on_violation="record") as g:
        ema = copy.deepcopy(model)
        with torch.no_grad():
            for mine, theirs in zip(ema.parameters(), model.parameters()):
                mine.mul_(0.5).add_(theirs, alpha=0.5)
        ema(torch.ones(2, 4, dtype=BF16))
        assert g.violations == []
        assert {v.module_path for v in _violations_after_a_call(g, model)} == {"1", "(root)"}
    assert _plain(model) and _plain(ema)
    # The copy, guarded in its turn, is reported under its own guard.
    with guard(ema, "bfloat16", on_violation="record") as g2:
        ema(torch.ones(2, 4, dtype=BF16))
    assert [v.code for v in g2.violations] == ["DTL192", "DTL193"]


def test_nested_guards_and_a_forward_of_the_users_own_survive_a_pickle():
    model = _model()
    calls = []

    def traced(x, _inner=model[0].forward):
        calls.append(1)
        return _inner(x)

    model[0].forward = traced
    with guard(model, "bfloat16", on_violation="record"), guard(model, "float32", on_violation="record"):
        # A local function cannot be pickled anyway; a deep copy keeps the user's own forward.
        clone = copy.deepcopy(model)
        model(torch.ones(2, 4, dtype=BF16))
    assert clone[0].__dict__["forward"] is traced and "forward" not in clone[1].__dict__
    clone(torch.ones(2, 4, dtype=BF16))
    assert calls == [1, 1]
    assert model[0].__dict__["forward"] is traced


def test_the_dispatch_table_is_left_as_it_was():
    import copyreg

    before = dict(copyreg.dispatch_table)
    model = _model()
    with guard(model, "bfloat16", on_violation="record"):
        assert torch.nn.Linear in copyreg.dispatch_table
        with guard(model, "bfloat16", on_violation="record"):
            model(torch.ones(2, 4, dtype=BF16))
        assert torch.nn.Linear in copyreg.dispatch_table  # the outer guard still needs it
    assert dict(copyreg.dispatch_table) == before
