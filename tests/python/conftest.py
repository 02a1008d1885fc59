"""pytest set-up: the deviceless-compile environment must be in place before jax loads."""

import aoizora.jaxenv  # noqa: F401
