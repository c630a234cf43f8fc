"""Each family's "How to confirm it" snippet (rule pages, hover, --show-flow) runs as
written with the runtime module and confirms that family's hazard on a model that has
it, and passes on one that does not."""

from __future__ import annotations

import pytest

from dtype_lint.core.ruledoc import CONFIRM

torch = pytest.importorskip("torch")
nn = torch.nn


class Pinned(nn.Module):
    """F1: a float32 table added to the activations."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        return self.proj(x) + torch.ones(4)


class Kept(nn.Module):
    """F2: a lambda kept on the module."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.act = lambda x: x


def run(family: str, **names) -> None:
    exec(CONFIRM[family][1], {"torch": torch, **names})  # noqa: S102 - the documented snippet itself


def test_the_f1_snippet_names_the_module_that_returns_float32():
    with pytest.raises(AssertionError, match="DTL19"):
        run("1", model=Pinned(), batch=torch.ones(2, 4, dtype=torch.bfloat16))
    run("1", model=nn.Linear(4, 4), batch=torch.ones(2, 4, dtype=torch.bfloat16))


def test_the_f2_snippet_names_what_pickle_cannot_store():
    with pytest.raises(AssertionError, match="model.act"):
        run("2", model=Kept())
    run("2", model=nn.Linear(4, 4))


def test_the_f3_snippet_names_each_recast_parameter():
    with pytest.raises(AssertionError, match="weight"):
        run("3", model=nn.Linear(4, 4).half())
    run("3", model=nn.Linear(4, 4))
