"""Errors a user can act on. The CLI prints them as one line and exits non-zero."""

from __future__ import annotations

import errno
import re


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


# errno values that mean a run directory cannot take more data: the run stops, with no retry
DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EFBIG})
# ... and a run directory made read-only under a running run (chmod: EACCES; chattr +i, or
# root's view of it: EPERM), counted only for a path inside that directory: elsewhere the
# same errno is no reason to stop a run
READ_ONLY_ERRNOS = frozenset({errno.EACCES, errno.EPERM})


# how Rust's std::io::Error ends its text; libraries written in Rust (safetensors, tokenizers)
# raise their own exception types with it rather than an OSError
_RUST_OS_ERROR = re.compile(r"\(os error (\d+)\)")


def _errno_of(exc: BaseException) -> int | None:
    if isinstance(exc, OSError):
        return exc.errno
    found = _RUST_OS_ERROR.search(str(exc))
    return int(found.group(1)) if found else None


def is_disk_error(exc: BaseException | None, inside: object = None) -> bool:
    """Whether `exc`, or any exception it was raised from or during, is a full or failing disk,
    or (given `inside`, a directory) a refused write of a path in that directory."""
    from pathlib import Path

    root = Path(str(inside)).absolute() if inside is not None else None
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if _errno_of(exc) in DISK_ERRNOS:
            return True
        if (root is not None and isinstance(exc, OSError) and exc.errno in READ_ONLY_ERRNOS
                and isinstance(exc.filename, str) and Path(exc.filename).absolute().is_relative_to(root)):
            return True
        exc = exc.__cause__ or exc.__context__
    return False
