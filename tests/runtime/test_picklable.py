"""check_picklable names the attribute path of every object a spawned worker could not receive."""

import pickle
import threading

import pytest

from dtype_lint.runtime import UnpicklableError, assert_picklable, check_picklable

torch = pytest.importorskip("torch")


class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(2, 2)
        self.act = lambda x: x.clamp(min=0)  # the hazard: lambdas do not pickle


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(2, 2)
        self.head = Head()


class Augmenting(torch.utils.data.Dataset):
    def __init__(self, transform):
        self.transform = {"train": transform}

    def __len__(self):
        return 2

    def __getitem__(self, index):
        return torch.zeros(2)


class Holder:
    def __init__(self):
        self.ok = [1, 2]
        self.lock = threading.Lock()


def make_collate():
    def collate(batch):
        return torch.stack(batch)

    return collate


def _line_of(text):
    with open(__file__, encoding="utf-8") as source:
        return next(n for n, line in enumerate(source, 1) if text in line)


def test_module_with_lambda_attribute():
    with pytest.raises(Exception):
        pickle.dumps(Model())  # the real hazard
    problems = check_picklable(Model(), "model")
    assert [p.path for p in problems] == ["model.head.act"]
    line = _line_of("self.act = lambda")
    assert str(problems[0]).startswith("model.head.act: <lambda> defined at ")
    assert str(problems[0]).endswith(f"test_picklable.py:{line}")
    assert problems[0].code == "DTL291"


def test_clean_objects_pass():
    good = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU())
    assert check_picklable(good) == []
    assert check_picklable({"a": [1, 2.0, "x"]}) == []
    assert_picklable(good)


def test_dataloader_parts_and_arbitrary_objects():
    loader = torch.utils.data.DataLoader(
        Augmenting(lambda x: x), collate_fn=make_collate(), worker_init_fn=lambda worker: None)
    paths = [p.path for p in check_picklable(loader, "loader")]
    # The sampler refers to the same dataset; it is reported once, under the dataset.
    assert paths == ["loader.dataset.transform['train']", "loader.collate_fn", "loader.worker_init_fn"]
    problems = check_picklable(loader, "loader")
    assert problems[1].culprit.startswith("make_collate.<locals>.collate() defined at ")
    found = check_picklable(Holder(), "holder")
    assert [(p.path, p.culprit) for p in found] == [("holder.lock", "_thread.lock object")]


def test_local_class_is_reported_besides_its_attributes():
    class Local:
        def __init__(self):
            self.lock = threading.Lock()

    found = check_picklable({"item": Local()}, "cfg")
    assert [p.path for p in found] == ["cfg['item']", "cfg['item'].lock"]
    assert found[0].culprit.startswith("instance of class test_local_class_is_reported")


def test_assert_raises_an_assertion_error_listing_all():
    model = Model()
    model.body.lock = threading.Lock()
    with pytest.raises(AssertionError) as info:
        assert_picklable(model, "model")
    assert isinstance(info.value, UnpicklableError)
    assert sorted(p.path for p in info.value.problems) == ["model.body.lock", "model.head.act"]
    assert "DTL291 model.head.act: <lambda> defined at" in str(info.value)
