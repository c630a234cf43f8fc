"""One flow engine, three configurations (sources, propagators, sanitizers, sinks, as
in taint analysis).

* :mod:`.engine`: the file's scopes and bindings and the generic propagators (names,
  branches, displays, ``self`` attributes, returns of the file's functions, carrying
  calls); :class:`~.engine.FlowConfig` is what a configuration overrides.
* :mod:`.pickling` (F2, :data:`~.pickling.PICKLING`): values pickle cannot store by
  reference (lambdas, local functions and classes, generators...).
* :mod:`.modules` (F3, :class:`~.modules.ModulesConfig`): modules (constructions of
  module classes, ``self`` in a module, factories, copies, device moves).
* :mod:`.float32` (F1, :data:`~.float32.FLOAT32`, :data:`~.float32.CAST_BACK`):
  float32 dtypes and the values cast to them; casts to another value's dtype and
  boolean or integer results stop them.

The sinks are the rules': each asks ``FileFlow.of(ctx).sources(expr, config)`` where
its hazard would land. The scopes and bindings are one file's; a call of another
file's function is followed through the project model's summary of it
(``dtype_lint.core.model``): what it returns (F2's factories).
"""

from dtype_lint.core.flow.engine import Carry, FileFlow, FlowConfig, FScope, Source, attribute_key
from dtype_lint.core.flow.pickling import HOLDERS, PICKLING, PICKLING_IN_FILE

__all__ = ["HOLDERS", "PICKLING", "PICKLING_IN_FILE", "Carry", "FScope", "FileFlow", "FlowConfig", "Source",
           "attribute_key"]
