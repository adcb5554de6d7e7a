"""Secrets kept out of everything agent-host writes or shows: one place that redacts.

A build's `env:` may hold a token (HF_TOKEN), and a command line may hold a key
(`--api-key`); a run's files are shared, lock files are read by `agent-host devices`, so
what they record is the names, never the values. Every record and report goes through
`redact_env`, every command line written down through `redact_argv`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

REDACTED = "<redacted>"

# A flag or variable whose name says it holds a secret (--api-key, HF_TOKEN, DB_PASSWORD;
# not --max-tokens): its value is never written down.
SECRET_NAME = re.compile(r"(key|token|secret|passw(or)?d|credentials?)$", re.IGNORECASE)


def redact_env(env: Mapping[str, object] | None) -> dict[str, str]:
    """A build's `env:` as records and reports show it: the names, every value redacted
    (which one is a secret cannot be told from its name alone: HF_TOKEN, but also WANDB_...)."""
    return {str(name): REDACTED for name in (env or {})}


def redact_argv(argv: Sequence[object]) -> list[str]:
    """A command line as a lock file or a record shows it: the value after a secret flag
    (`--api-key KEY`), and the value of `--api-key=KEY` or `HF_TOKEN=...`, redacted."""
    out: list[str] = []
    hide_next = False
    for arg in (str(a) for a in argv):
        if hide_next:
            out.append(REDACTED)
            hide_next = False
            continue
        name, eq, _ = arg.partition("=")
        if eq and SECRET_NAME.search(name):
            out.append(f"{name}={REDACTED}")
        else:
            out.append(arg)
            hide_next = arg.startswith("-") and bool(SECRET_NAME.search(arg))
    return out


def is_redacted(env: Mapping[str, object] | None) -> bool:
    """True when an `env:` was read back from a record (its values are not there)."""
    return any(v == REDACTED for v in (env or {}).values())
