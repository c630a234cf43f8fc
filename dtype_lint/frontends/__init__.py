"""The front-ends, thin adapters of the lint core: the CLI and its output formats, the
generated docs, and the flake8, mypy and pytest plugins."""
