"""The prefilter's on/off switch, apart from the prefilter itself: reading it must not
cost the prefilter's import (its patterns) in a run answered from the cache."""

from __future__ import annotations

import contextlib
import os
from typing import Iterator

# Set to "0" to parse every file whole with every selected rule (for comparisons).
ENV_SWITCH = "DTYPE_LINT_PREFILTER"


def enabled() -> bool:
    return os.environ.get(ENV_SWITCH, "1") != "0"


@contextlib.contextmanager
def switched(on: bool) -> Iterator[None]:
    """Turn the prefilter on or off for this process and the workers it starts."""
    before = os.environ.get(ENV_SWITCH)
    os.environ[ENV_SWITCH] = "1" if on else "0"
    try:
        yield
    finally:
        if before is None:
            del os.environ[ENV_SWITCH]
        else:
            os.environ[ENV_SWITCH] = before
