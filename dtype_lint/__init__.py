"""dtype-lint: find dtype hazards in PyTorch, Lightning, JAX and Flax code.

Importing this package imports neither torch nor jax.
"""

__version__ = "0.1.0"
