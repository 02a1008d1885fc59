"""Errors a user can act on. The CLI prints them as one line and exits 2."""


class UserError(Exception):
    """Bad input or an impossible request: the message says what, where, and what to do."""
