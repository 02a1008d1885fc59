"""One module per ``aoizora`` subcommand; each defines ``register(subparsers)``."""
