"""The pytest plugin's public path: the ``pytest11`` entry point, and
``-p dtype_lint.pytest_plugin`` where plugins are not autoloaded.

The plugin lives with the other front-ends, in :mod:`dtype_lint.frontends.pytest_plugin`;
pytest registers this module, so every hook and fixture of that one is taken in here.
"""

from dtype_lint.frontends.pytest_plugin import *  # noqa: F403
