"""`import aoizora.jaxenv` before jax, as earlier releases documented: an alias of
aoizora.compile.jaxenv, kept for one release (the README now imports that)."""

from aoizora.compile import jaxenv  # noqa: F401  (importing it sets the environment)
