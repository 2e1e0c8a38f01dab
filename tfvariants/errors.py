"""Errors that reach the user as one line, never as a traceback."""


class UserError(Exception):
    """Bad input or a missing prerequisite: printed as one line, exit code 2."""

    exit_code = 2
