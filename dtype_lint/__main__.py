"""`python -m dtype_lint` runs the CLI."""

from dtype_lint.cli import main

raise SystemExit(main())
