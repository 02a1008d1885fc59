"""User input checked before any work starts: command-line values, topology files, the
user's own model, and plan-many's settings file."""
