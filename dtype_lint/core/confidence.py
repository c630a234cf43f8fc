"""How sure a finding is, from the kind of evidence behind it, never from names alone:

* ``high``: every link of the path (the hazard, what it reaches, why that matters) is in
  code the engine read;
* ``medium``: one link is inferred by a convention (a receiver taken as a module by its
  name, an unresolved base taken as a module by its use, a training use assumed from
  context, a sanitizer that only likely holds);
* ``low``: a pattern alone.

``min-confidence`` (config, ``--min-confidence``) hides what is below it; ``low`` is the
audit mode.
"""

from __future__ import annotations

LEVELS = ("low", "medium", "high")
# The basis of a finding no convention weakened.
SEEN = "every link of the path seen in code the engine read"


def rank(level: str) -> int:
    return LEVELS.index(level)


def weakest(*levels: str) -> str:
    """The lowest of ``levels`` (``high`` for none)."""
    return min(levels, key=rank, default="high")


def shown(level: str, minimum: str) -> bool:
    """Whether a finding of ``level`` is shown at ``min-confidence`` ``minimum``."""
    return rank(level) >= rank(minimum)
