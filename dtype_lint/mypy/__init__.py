"""Helpers of the mypy plugin (:mod:`dtype_lint.mypy_plugin`): type-aware checks over mypy nodes."""
