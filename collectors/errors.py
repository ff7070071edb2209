"""Errors that end the program with one clear line and exit code 2."""


class UserError(Exception):
    """Bad input from the user (a file, a flag, a config): one line, exit 2."""

    exit_code = 2
