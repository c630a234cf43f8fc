"""The lint core: one file from text to findings.

read → prefilter (:mod:`.prefilter`, asking each selected rule what it needs) → one LibCST
parse (:mod:`.engine`) → one read-only traversal (:mod:`.traversal`) that keeps the shared
file facts (:mod:`.context`) → reports → positions (:mod:`.positions`) → suppressions
(:mod:`.suppression`) → :class:`~.finding.Finding`. Fixes are applied by :mod:`.fixes`;
`# noqa` comments are written by :mod:`.noqa`.
It names no rule: rules come from :mod:`dtype_lint.rules.registry`.
"""
