"""Helpers of the mypy plugin (:mod:`dtype_lint.frontends.mypy.plugin`): type-aware checks over mypy nodes."""
