"""What a run directory holds, as models: the contract between the agent, runs and report.

`episode.json` and each line of `episodes.jsonl` are an EpisodeRecord; each line of an
episode's `steps.jsonl` is a StepRecord. The report layer reads only these files.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, BinaryIO, Literal

from pydantic import BaseModel, Field, ValidationError

from agent_host.errors import UserError

if TYPE_CHECKING:
    from agent_host.config.tasks import TaskInstance

Outcome = Literal[
    "success", "premature", "undone", "collateral", "unrecognised", "infeasible_claimed", "nav_fail", "exhausted",
    "error"
]
OUTCOMES: tuple[str, ...] = Outcome.__args__  # type: ignore[attr-defined]
Variant = Literal["base", "verify"]

# The kinds of task a report breaks success down by: tags with these exact spellings in a
# task's `tags:` (an infeasible task is of kind `infeasible` by its flag too).
TASK_KINDS: tuple[str, ...] = ("multi-app", "text-entry", "retrieval", "long-horizon", "infeasible", "recognition")
NO_KIND = "no kind tag"


def task_kinds(tags: list[str] | tuple[str, ...], infeasible: bool = False) -> list[str]:
    """A task's kinds, in TASK_KINDS order; [NO_KIND] when it has none."""
    have = set(tags) | ({"infeasible"} if infeasible else set())
    return [k for k in TASK_KINDS if k in have] or [NO_KIND]


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int | None = None
    image_tokens: int | None = None    # of prompt_tokens, the images' (vLLM's multimodal_tokens); None: none counted


class PhaseTimes(BaseModel):
    """Seconds spent per phase; for an episode, summed over its steps."""
    observe: float = 0.0
    model: float = 0.0
    act: float = 0.0
    settle: float = 0.0
    judge: float = 0.0


class RoundTrips(BaseModel):
    """Device round trips (adb streams opened: shell calls, JSON-RPC requests) in a step:
    `critical` ones the step waited on in series, `background` ones that ran beside it
    (screenshot, judge), counted at the Phone wrapper; `wait_s` the time the step spent
    waiting on the phone in series (its calls and the settle's minimum delay)."""
    critical: int = 0
    background: int = 0
    wait_s: float = 0.0      # seconds the step waited on the phone in series (calls, settle delay)


class Action(BaseModel):
    """The parsed tool call and where it landed on screen (for drawing on screenshots)."""
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    point: tuple[int, int] | None = None       # tap / long_press / type_text target
    to: tuple[int, int] | None = None          # swipe end
    error: str | None = None                   # invalid index, unknown app, ...


class StepRecord(BaseModel):
    step: int                                  # 1-based; the goal after setup is step 0
    observation: str                           # exactly the text the model saw
    package: str | None = None                 # foreground package at observation
    screenshot: str | None = None              # file name inside the episode folder
    image: str | None = None                   # a vision build's prompt image (images/<sha>.png), marks and all
    usage: Usage = Field(default_factory=Usage)
    # message content + tool_calls; `cut`: what the reply caps cut (agent/model_client.REPLY_CAPS), field -> size sent
    raw_output: dict[str, Any] = Field(default_factory=dict)
    action: Action | None = None               # None: no valid tool call (wasted step)
    retry_error: str | None = None             # error fed back to the model this step
    times: PhaseTimes = Field(default_factory=PhaseTimes)
    wall_s: float | None = None                # the step's own wall time (step 0: setup)
    round_trips: RoundTrips | None = None
    cached_share: float | None = None          # usage.cached_tokens / usage.prompt_tokens
    goal: bool                                 # goal after this step's action: asked and clean
    # The two halves of `goal` (judge/checks.py), None in records from before the whole-state
    # judge: `asked`, the task's check (the asked-for change is there; None on infeasible tasks);
    # `clean`, nothing else in the task's scope changed since setup.
    asked: bool | None = None
    clean: bool | None = None
    # nothing in the task's scope changed since setup (giving up is judged by it: `clean` is
    # false before any change on a feasible task); None in older records
    untouched: bool | None = None
    check_detail: dict[str, Any] = Field(default_factory=dict)


# The run directory's names (docs/concepts.md, "Run layout")
EPISODES = "episodes.jsonl"                            # the run's episode log
STEPS = "steps.jsonl"                                  # an episode folder's step log
BLIND_REPLAY = Path("baselines") / "blind-replay"      # a blind replay of the run (runs/blind_replay.py)


_UNSAFE = re.compile(r"[^A-Za-z0-9._@-]")


def episode_id(build: str, task_id: str, variant: str, repeat: int, vary: str | None = None) -> str:
    """`<build>__<task-instance>__<variant>__r<repeat>`, then `__v-<vary>` where a run plays more
    than one variation condition, characters outside [A-Za-z0-9._@-] as `_` (the name of the
    episode's folder)."""
    tail = f"__v-{vary}" if vary is not None else ""
    return _UNSAFE.sub("_", f"{build}__{task_id}__{variant}__r{repeat}{tail}")


@dataclass(frozen=True)
class EpisodeIdentity:
    """Who an episode is: made once, by the run's plan (or for a lone episode by the CLI),
    and written into its record unchanged."""
    episode_id: str
    build: str
    repeat: int = 0
    seed: int = 0
    attempt: int = 1
    run_id: str | None = None
    vary: str = "none"           # the variation condition (config/variation.py: a level or kinds)

    @classmethod
    def of(cls, build: str, task: TaskInstance, repeat: int = 0, seed: int = 0, attempt: int = 1,
           run_id: str | None = None, vary: str = "none") -> EpisodeIdentity:
        return cls(episode_id(build, task.id, task.variant, repeat), build, repeat, seed, attempt, run_id, vary)


class Exhaustion(BaseModel):
    """A budget the harness imposes ran out and ended the episode (outcome `exhausted`)."""
    kind: Literal["context", "reply_tokens"]   # context window; max tokens per reply on every retry
    step: int                                  # the step that could not be completed
    tokens: int | None = None                  # conversation tokens (context) / reply tokens (reply_tokens)
    limit: int | None = None                   # the budget, when the server named it
    detail: str = ""


class EpisodeRecord(BaseModel):
    episode_id: str
    run_id: str | None = None
    build: str
    model: str
    task: str                                  # task instance id, e.g. "wifi-on" or "alarm-set[0]"
    # the id in the task file, shared by its parameter sets and variants: the statistics' cluster
    # (older records lack it; report/selection.py derives it from `task` then)
    task_id: str | None = None
    task_file: str | None = None
    variant: Variant = "base"
    infeasible: bool = False
    repeat: int = 0
    seed: int = 0
    phone: str
    attempt: int = 1
    outcome: Outcome
    error: str | None = None                   # why, when outcome == "error"
    goal_initial: bool = False                 # goal after setup (true for verify variants)
    goal_first_step: int | None = None         # first step (>= 1) after which the goal held
    goal_lost_step: int | None = None          # first step after goal_first_step where it did not
    goal_final: bool = False
    complete_step: int | None = None           # step of task_complete
    infeasible_step: int | None = None         # step of task_infeasible
    steps: int = 0
    max_steps: int = 0
    wasted_steps: int = 0
    started_at: str = ""
    ended_at: str = ""
    wall_s: float = 0.0
    times: PhaseTimes = Field(default_factory=PhaseTimes)
    usage: Usage = Field(default_factory=Usage)
    server_metrics: dict[str, float] | None = None   # delta of the server's /metrics
    # share of prompt tokens served from the server's prefix cache: from step 2 on, from the
    # responses' cached-token counts ("usage"); else the /metrics prefix-cache hits / queries
    # of the whole episode ("metrics"); None when the server tells neither
    cached_share: float | None = None
    cached_share_source: Literal["usage", "metrics"] | None = None
    reason: str | None = None                  # the model's reason for complete/infeasible
    answer: str | None = None                  # the text of the last `answer` action (question tasks)
    exhausted: Exhaustion | None = None        # set when outcome == "exhausted"
    # the variation condition (`run --vary`) and what it chose for this episode's phone
    # (config/variation.py Variation.as_dict); older records: "none"
    vary: str = "none"
    variation: dict[str, Any] | None = None


# --------------------------------------------------------------------------- files
# The one writer of whole files and the one reader of the episode log: the agent, runs and
# report layers all use these, so a torn line or a half-written file means the same thing
# everywhere.

def write_text_atomic(path: Path, text: str | Iterable[str], *, durable: bool = True) -> None:
    """Write `path` so a reader sees the old file or the new one, never a mix: a uniquely
    named temporary file beside it (two writers never share one), fsynced, then renamed.
    On any error (a full disk included) the temporary file is removed and the error raised.
    `text` may be pieces, written as they come (a large file need not be held whole).
    `durable=False` skips the fsync, for files the next write makes again (a report's pages)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            if isinstance(text, str):
                f.write(text)
            else:
                f.writelines(text)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class NotOwnFile(UserError):
    """A path agent-host writes that is a symlink, not a regular file, or someone else's."""


def open_own(path: Path, flags: int, mode: int = 0o644) -> int:
    """`os.open` for a file agent-host owns (a run directory's log and lock, a phone lock):
    never through a symlink (O_NOFOLLOW: another user's link would have us truncate or
    append to its target), and only a regular file of this user's, so nothing is written
    that we did not create. Refused in one line naming the path and what is wrong."""
    path = Path(path)
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0), mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotOwnFile(f"{path}: a symbolic link; refused (agent-host writes only its own files "
                             f"there, never through a link)") from None
        if exc.errno == errno.ENXIO:   # a FIFO nobody reads, opened to write without blocking
            raise NotOwnFile(f"{path}: not a regular file; refused") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotOwnFile(f"{path}: not a regular file; refused")
        if st.st_uid != os.getuid():
            raise NotOwnFile(f"{path}: owned by uid {st.st_uid}, not by this user (uid {os.getuid()}); refused")
        if st.st_nlink > 1:   # a hard link planted there shares its inode with a file elsewhere
            raise NotOwnFile(f"{path}: has {st.st_nlink} hard links; refused")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


class NotRegularFile(OSError):
    """A path agent-host reads that is a FIFO, a device, a socket or a directory. An OSError,
    so every reader that already turns an unreadable file into a warning or a one-line error
    does the same with this one (`exc.strerror` is "not a regular file")."""


def open_regular(path: Path, *, follow: bool = True) -> BinaryIO:
    """Open `path` for reading, only if it is a regular file. A FIFO in a run directory (or a
    device) would block the open, and then the read, for ever: O_NONBLOCK lets the open of a
    FIFO return at once, fstat then refuses it, and a regular file is read blocking as usual.
    `follow=False` refuses a symlink too (O_NOFOLLOW). Raises OSError (NotRegularFile naming
    the path, or the open's own: FileNotFoundError...)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow:
        flags |= os.O_NOFOLLOW
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(errno.EINVAL, "not a regular file", str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: Path, *, follow: bool = True) -> bytes:
    """The bytes of `path`, a regular file (see open_regular)."""
    with open_regular(path, follow=follow) as f:
        return f.read()


def write_json_atomic(path: Path, data: object) -> None:
    write_text_atomic(path, json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def read_step_log(episode_dir: Path) -> list[StepRecord]:
    """An episode folder's `steps.jsonl`, step 0 first (a regular file only)."""
    text = read_regular(episode_dir / STEPS).decode("utf-8")
    return [StepRecord.model_validate_json(line) for line in text.splitlines() if line.strip()]


def read_episode_log(path: Path, warnings: list[str] | None = None) -> list[EpisodeRecord]:
    """Every record of an episode log, in order. A last line without its newline is a write
    a kill interrupted: it is ignored (with a warning) and the run store cuts it off before
    appending again. Any other unreadable line raises LogError naming `path:line`."""
    return list(iter_episode_log(path, warnings))


def iter_episode_log(path: Path, warnings: list[str] | None = None) -> Iterator[EpisodeRecord]:
    """`read_episode_log`, one record at a time: the log is read line by line, never whole
    (a 200 000-episode log is over 100 MB)."""
    path = Path(path)
    try:
        f = open_regular(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise LogError(f"{path}: cannot read ({exc.strerror or exc})") from None
    with f:
        i = 0
        while True:
            try:
                raw = f.readline()
            except OSError as exc:
                raise LogError(f"{path}:{i + 1}: cannot read ({exc.strerror or exc})") from None
            if not raw:
                return
            i += 1
            if not raw.endswith(b"\n"):  # no newline after it: the last line, torn
                if raw.strip() and warnings is not None:
                    warnings.append(f"{path}:{i}: ignored a partial last line (run interrupted mid-write?)")
                return
            if not raw.strip():
                continue
            try:
                yield EpisodeRecord.model_validate_json(raw)
            except ValidationError as exc:
                first = exc.errors(include_url=False)[0]
                where = ".".join(str(x) for x in first.get("loc", ())) or "line"
                raise LogError(f"{path}:{i}: {where}: {first.get('msg')}") from None


class LogError(UserError):
    """An episode log line that is not a record (and not a torn last line)."""
