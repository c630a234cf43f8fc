"""The static rules, one file each, grouped by family (:mod:`.float32`, :mod:`.pickling`,
:mod:`.recast`): each is its docs, message, examples and a declaration of what it finds
(finders, a flow, sanitizers) over the concepts of :mod:`dtype_lint.concepts`. The
registry (:mod:`.registry`) finds them; :mod:`.codes` reads their codes from the file
names and :mod:`.selection` loads a selection lazily. Importing this package imports no
rule and no LibCST."""
