"""The lint core: one file from text to findings, knowing no rule and no ML framework.

read → prefilter (:mod:`.prefilter`, cutting the file into :mod:`.units` and asking each
selected rule's finders what they need) → one LibCST parse (:mod:`.engine`) → one
read-only traversal (:mod:`.traversal`) of the rules' finders, with the shared file facts
(:mod:`.context`), the flow engine (:mod:`.flow`) and the project model (:mod:`.model`)
→ sites judged and reported by the rule protocol (:mod:`.rule`) → positions →
suppressions (:mod:`.suppression`) → :class:`~.finding.Finding`. Fixes are applied by
:mod:`.fixes`; ``# noqa`` comments are written by :mod:`.noqa`. The rules are handed down
(a :class:`~.rule.Selection`): nothing here imports them.
"""
