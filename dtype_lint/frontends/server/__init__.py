"""`dtype-lint server`: a Language Server (pygls) over stdio.

:mod:`.app` wires the LSP features to the engine, :mod:`.documents` lints one open
document with the configuration found for it, :mod:`.positions` converts between the
engine's positions and the client's, :mod:`.actions` builds the code actions.
pygls is an optional dependency (the ``server`` extra); nothing here is imported by the
other front-ends.
"""
