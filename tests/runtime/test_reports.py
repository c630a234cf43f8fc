"""What a guard says beyond findings: coverage warnings, output fields, notes, call sites."""

import threading
import warnings

import pytest

from dtype_lint.runtime import DTypeGuardWarning, guard

torch = pytest.importorskip("torch")

BF16 = torch.bfloat16


def _stack(n=4):
    return torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.LayerNorm(8))
                                 for _ in range(n)])


def test_model_compiled_before_the_guard_is_still_checked():
    model = _stack(1)
    with guard(model, "bfloat16", on_violation="record") as eager:
        model(torch.ones(2, 8))
    compiled = torch.compile(model, backend="eager")
    compiled(torch.ones(2, 8))
    # The wrapped forwards are new code to dynamo: it recompiles them, and the checks run.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # dynamo's recompilation notices
        with guard(model, "bfloat16", on_violation="record") as g:
            compiled(torch.ones(2, 8))
    assert g.modules_checked == 4 and set(g.violations) == set(eager.violations)


def test_modules_added_after_entering_are_named():
    model = _stack(1)
    with pytest.warns(DTypeGuardWarning, match=r"only 4 of the model's 11 modules; likely: 7 module\(s\) were "
                                                r"added after the guard was entered and are not watched \(1, 2, 3, \.\.\.\)"):
        with guard(model, "float32", on_violation="record"):
            for index in range(1, 8):
                model.append(torch.nn.Linear(8, 8))
            model(torch.randn(2, 8))


def test_a_guard_that_saw_every_module_is_silent():
    model = _stack()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with guard(model, "float32") as g:
            model(torch.randn(2, 8))
    assert g.modules_checked == 1 + 4 * 3


class Heads(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, ids):
        x = torch.nn.functional.one_hot(ids, 8).float()
        return {"loss": self.fc(x).mean(), "logits": self.fc(x).to(BF16), "extra": (x, x.double())}


def test_DTL193_names_the_output_fields():
    model = Heads()
    with guard(model, "float32", on_violation="record") as g:
        model(torch.tensor([1, 2]))
    (violation,) = g.violations
    assert violation.message == "output 'logits' is bfloat16; output 'extra[1]' is float64, expected float32"


def test_output_input_with_only_integer_inputs_says_so():
    model = Heads()
    with pytest.warns(DTypeGuardWarning, match="policy.output='input' but the call of .root. had no floating input"):
        with guard(model, "p=f32,c=f32,o=input", on_violation="record"):
            model(torch.tensor([1, 2]))


def test_warnings_point_at_the_users_call():
    model = torch.nn.Sequential(torch.nn.Linear(8, 8))
    with pytest.warns(DTypeGuardWarning) as caught:
        with guard(model, "bfloat16", on_violation="warn"):
            model(torch.randn(2, 8))
    assert {record.filename for record in caught} == {__file__}


def test_calls_from_another_thread_are_seen_by_a_torch_guard():
    model = _stack(1)
    with guard(model, "bfloat16", on_violation="record") as g:
        worker = threading.Thread(target=model, args=(torch.randn(2, 8),))
        worker.start()
        worker.join()
    assert g.modules_checked == 4 and g.violations
