"""`python -m dtype_lint` runs the CLI."""

from dtype_lint.frontends.cli import main

raise SystemExit(main())
