"""The mypy plugin's public entry point: ``plugins = ["dtype_lint.mypy_plugin"]``.

The plugin itself lives with the other front-ends, in :mod:`dtype_lint.frontends.mypy.plugin`;
this module keeps the documented path stable, and refuses an older mypy out loud: the
plugin reports its findings from a hook (``get_additional_indirect_deps``) that mypy
only calls from 2.4 on, so under an older mypy it would load and report nothing.
"""

import re

from mypy.version import __version__ as _MYPY_VERSION

#: The first mypy release that calls every hook the plugin reports from.
MINIMUM_MYPY = (2, 4)


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version)[:2])


if _release(_MYPY_VERSION) < MINIMUM_MYPY:
    _wanted = ".".join(map(str, MINIMUM_MYPY))
    raise ImportError(f"dtype-lint's mypy plugin needs mypy >= {_wanted}, and this is mypy {_MYPY_VERSION} "
                      f"(an older mypy would run the plugin and report nothing): pip install 'mypy>={_wanted}'")

from dtype_lint.frontends.mypy.plugin import plugin  # noqa: E402 (after the version check)

__all__ = ["MINIMUM_MYPY", "plugin"]
