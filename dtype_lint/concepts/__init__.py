"""The families' concepts, as ``POLICY.md`` names them: what a rule is declared with.

F1, hardcoded float32: :mod:`.float32` (the flow of float32 dtypes and casts),
:mod:`.layer_facts` (a file's :mod:`.layers` and forward path, :mod:`.islands` cast back,
dtype roles and parameter :mod:`.storage`, :mod:`.buffers`, :mod:`.quantised` code),
:mod:`.activations` (where the activations go), :mod:`.deliberate` (float32 that is
deliberate), :mod:`.entry_points` (the user's and the data's side), and the finders
:mod:`.dtype_defaults`, :mod:`.fallbacks`, :mod:`.forward_pins`, :mod:`.beside_input`.

F2, pickling: :mod:`.unpicklable` (the flow of values pickle cannot store),
:mod:`.crossing` (which objects cross a process boundary whole), and the finders
:mod:`.process_targets`, :mod:`.loaders`, :mod:`.wrappers`, :mod:`.kept`.

F3, recasting: :mod:`.modules` (what is a module), :mod:`.trained` (what is trained, and
what runs for inference or export), :mod:`.casts`, :mod:`.casting_helpers`,
:mod:`.parameter_trees`, and the finders :mod:`.module_casts`, :mod:`.tree_casts`,
:mod:`.state_dicts`, :mod:`.tree_aliases`.

Shared: :mod:`.test_code`. The ``*_shapes`` modules hold the finders' shapes on CPython's
``ast``, which the prefilter checks. Layers point down: rules → concepts → core.
"""
