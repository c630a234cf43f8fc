"""The frameworks' classes dtype-lint knows without reading their source (``facts.json``,
generated from the real packages by :mod:`dtype_lint.frameworks.generate_facts`): a class
of torch, Lightning or Flax is a module or a dataset whatever is installed beside the
linter, so the CLI, pre-commit's bare environment, flake8, mypy and the editor agree."""

from __future__ import annotations

import functools
import json
from pathlib import Path


@functools.lru_cache(maxsize=1)
def _table() -> dict[str, frozenset[str]]:
    """Dotted class name -> its kinds (torch_module, flax_module, dataset)."""
    raw = json.loads(Path(__file__).with_name("facts.json").read_text(encoding="utf-8"))
    table: dict[str, set[str]] = {}
    for kind, names in raw.items():
        if kind == "generated from":
            continue
        for name in names:
            table.setdefault(name, set()).add(kind)
    return {name: frozenset(kinds) for name, kinds in table.items()}


def bundled_kinds(qualified: str) -> frozenset[str]:
    """The kinds the bundled facts give a framework's class (empty for any other name)."""
    return _table().get(qualified, frozenset())


def generated_from() -> dict[str, str]:
    """The versions of the frameworks the facts were generated from."""
    return json.loads(Path(__file__).with_name("facts.json").read_text(encoding="utf-8"))["generated from"]
