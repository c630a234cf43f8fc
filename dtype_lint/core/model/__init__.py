"""The project model: what other files say, found without importing anything.

:mod:`.finder` turns a dotted module name into a file (the linted file's own package
root, configured source roots, then an environment's search path, which
:mod:`.environment` reads from its files without running it); :mod:`.summary`
reads one file's ``ast`` into a small, JSON-able summary (imports, classes with their
bases and what their constructors keep, functions and what they do with their
parameters); :mod:`.project` resolves names across summaries (re-exports, star imports,
base classes), each summary built once per content, and records which files a lint
consulted so a cached result can be invalidated when one of them changes.
"""
