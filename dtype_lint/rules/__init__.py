"""The static rules, one file each, grouped by family (:mod:`.float32`, :mod:`.pickling`,
:mod:`.recast`), with what they share: the base class (:mod:`.base`), their docs type
(:mod:`.catalog`), options (:mod:`.options`) and the registry that finds them
(:mod:`.registry`). Importing this package imports no rule and no LibCST."""
