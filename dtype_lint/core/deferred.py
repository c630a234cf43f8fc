"""LibCST, imported on first use rather than when a module that uses it is imported.

The prefilter imports the selected rules to ask each what a unit must hold, and a file
in which nothing can be found must not pay for LibCST (about a quarter of a second):
the rule modules and their helpers take ``cst`` from here. Type checkers see the real
module.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any


class _Deferred:
    """A module imported when one of its attributes is first read."""

    def __init__(self, name: str) -> None:
        self.__dict__["_name"] = name

    def __getattr__(self, attribute: str) -> Any:
        module = importlib.import_module(self.__dict__["_name"])
        # Later reads find the module's names here directly, as fast as on the module.
        self.__dict__.update(vars(module))
        return getattr(module, attribute)


if TYPE_CHECKING:
    import libcst as cst
else:
    cst = _Deferred("libcst")
