"""Errors a user can act on. The CLI prints them as one line and exits 2."""


class UserError(Exception):
    """Bad input or an impossible request: the message says what, where, and what to do."""


class NoFit(UserError):
    """No legal sharding of the workload fits in the slice's memory (the message gives the
    least memory-hungry candidate's numbers)."""
