"""Errors a user can act on. The CLI prints them as one line and exits non-zero."""


class UserError(Exception):
    """Bad input or an unusable environment; the message names the file, line or field."""


class ConfigError(UserError):
    """A YAML file (task, build, profile) failed to load or validate."""
