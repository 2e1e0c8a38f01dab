"""Errors that reach the user as one line, never as a traceback."""

from __future__ import annotations


class UserError(Exception):
    """Bad input or a missing prerequisite: printed as one line, exit code 2."""

    exit_code = 2


def one_line(text: object) -> str:
    """``text`` with every control or line-breaking character escaped (\\n, \\x1b,
    \\u2028, ...): a message quoting a user's value stays one line, and cannot move the
    terminal's cursor."""
    return "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in str(text)
    )
