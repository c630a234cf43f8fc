"""Running over a project: configuration, file discovery and excludes, the results cache,
and linting many files (in worker processes)."""
