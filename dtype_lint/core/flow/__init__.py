"""The flow engine (sources, propagators, sanitizers, sinks, as in taint analysis): the
file's scopes and bindings and the generic propagators (names, branches, displays,
``self`` attributes, returns of the file's functions, carrying calls), in
:mod:`.engine` and :mod:`.scopes`. :class:`~.engine.FlowConfig` is what a configuration
overrides; the configurations are the families' concepts (:mod:`dtype_lint.concepts`:
``float32``, ``unpicklable``, ``modules``, ``parameter_trees``), and the sinks are the
rules' finders, which ask ``FileFlow.of(ctx).sources(expr, config)`` where a hazard
would land. A call of another file's function is followed through the project model's
summary of it (``dtype_lint.core.model``)."""
