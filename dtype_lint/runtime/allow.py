"""``allow=``: findings a guard should neither record nor raise.

Each item is a check code (``"DTL193"``), a glob over module paths (``"pos_drop"``,
``"encoder.*"``, ``"blocks/*/norm"``) or a module class (``torch.nn.Dropout``; a
finding on an instance of it, or of a subclass, is allowed).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from typing import Any

_CODE = re.compile(r"DTL\d{3}", re.IGNORECASE)


class Allow:
    """A compiled ``allow=`` list; ``allow(code, path, module)`` says whether to drop a finding."""

    def __init__(self, items: Iterable[Any] | str | type | None = None) -> None:
        if items is None:
            items = ()
        elif isinstance(items, (str, type)):
            items = (items,)
        self.codes: set[str] = set()
        self.globs: list[str] = []
        types: list[type] = []
        for item in items:
            if isinstance(item, type):
                types.append(item)
            elif isinstance(item, str) and _CODE.fullmatch(item.strip()):
                self.codes.add(item.strip().upper())
            elif isinstance(item, str) and item.strip():
                self.globs.append(item.strip())
            else:
                raise TypeError(f"allow= takes check codes, module path globs and module classes, "
                                f"got {item!r}")
        self.types = tuple(types)

    def __bool__(self) -> bool:
        return bool(self.codes or self.globs or self.types)

    def __call__(self, code: str, path: str, module: Any = None) -> bool:
        if code in self.codes:
            return True
        if self.types and module is not None and isinstance(module, self.types):
            return True
        return any(fnmatch.fnmatchcase(path, glob) for glob in self.globs)
