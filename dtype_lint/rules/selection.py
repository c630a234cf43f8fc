"""Rules chosen by code, loaded when a file first needs them (a
:class:`~dtype_lint.core.rule.Selection`): configuration, the cache and the mypy plugin's
start-up only need the codes, and importing the rules imports LibCST."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dtype_lint.core.rule import Rule


@dataclasses.dataclass(frozen=True)
class Selected:
    """Rules chosen by code, imported when a file first needs them: a run answered from
    the cache never imports LibCST."""

    codes: tuple[str, ...]

    def load(self) -> list[type[Rule]]:
        from dtype_lint.rules.registry import RULES_BY_CODE

        return [RULES_BY_CODE[code] for code in self.codes]
