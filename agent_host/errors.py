"""Errors a user can act on. The CLI prints them as one line and exits non-zero."""


class UserError(Exception):
    """Bad input or an unusable environment; the message names the file, line or field."""


class ConfigError(UserError):
    """A YAML file (task, build, profile) failed to load or validate."""


def check_dir_usable(path: object, option: str) -> None:
    """UserError unless `path` is a directory or can be made one (it creates nothing)."""
    from pathlib import Path

    target = Path(str(path))
    for parent in (target, *target.parents):
        if parent.exists():
            if not parent.is_dir():
                raise UserError(f"{option} {target}: {parent} is not a directory")
            return
