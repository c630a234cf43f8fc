"""The mypy plugin's public entry point: ``plugins = ["dtype_lint.mypy_plugin"]``.

The plugin itself lives with the other front-ends, in :mod:`dtype_lint.frontends.mypy.plugin`;
this module keeps the documented path stable.
"""

from dtype_lint.frontends.mypy.plugin import plugin

__all__ = ["plugin"]
