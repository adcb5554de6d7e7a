"""One episode's varied phone: the choices drawn from its seed for its task (`choose`), the shell
commands that make and undo it (`setup_commands`, `teardown_commands`), and the task with them
added to its setup and teardown (`apply`). The kinds and levels are config/variation.py's.
"""

from __future__ import annotations

import random
import re
from dataclasses import asdict, dataclass, field

from agent_host.config.checks import AnswerCheck, leaves
from agent_host.config.scope import texts_of
from agent_host.config.steps import ShellStep
from agent_host.config.tasks import TaskInstance, overlay_choices, with_values
from agent_host.config.variation import (DENSITIES, FONT_SCALES, INTERRUPTIONS, KEYS, VIRTUAL_ONLY, parse_vary,
                                         vary_seed)


@dataclass(frozen=True)
class Variation:
    """The choices made for one episode's phone; None/() where a kind is not varied."""
    spec: str
    seed: int
    kinds: tuple[str, ...]
    launcher_seed: int | None = None
    font_scale: float | None = None
    density: int | None = None
    dark: bool | None = None
    clock_24h: bool | None = None
    interruption: str | None = None
    interrupt_after: int | None = None
    suggestions: tuple[int, int] | None = None      # Settings' suggestion cards: (count, seed)
    values: int | None = None                       # the overlay played (config/tasks.py overlay_choices)
    distractors: dict[str, int] = field(default_factory=dict)   # state kind -> rows added

    def as_dict(self) -> dict[str, object]:
        return {k: v for k, v in asdict(self).items() if v not in (None, {}, ())}


def applicable(task: TaskInstance, kinds: tuple[str, ...], simulated: bool) -> tuple[str, ...]:
    """The kinds of `kinds` that this task on this phone takes: not the task's own subject
    (`KEYS`), not its `vary.skip`, not a virtual-phone-only kind on a real phone, and
    distractors only where the task touches a kind of state that has them."""
    blob = "\n".join(texts_of([s.model_dump() for s in [*task.setup, *task.teardown]])
                     + texts_of(task.check.model_dump() if task.check is not None else None) + [task.goal])
    out = []
    for k in kinds:
        if k in task.vary_skip or (k in VIRTUAL_ONLY and not simulated):
            continue
        if k in KEYS and KEYS[k].search(blob):
            continue
        if k == "distractors" and not any(kind in DISTRACTORS for kind in task.scope.kinds):
            continue
        if k == "values" and not overlay_choices(task):
            continue
        out.append(k)
    return tuple(out)


def choose(task: TaskInstance, spec: str, seed: int, *, simulated: bool) -> Variation:
    """The variation of `task`'s phone for condition `spec` and episode seed `seed`."""
    kinds = applicable(task, parse_vary(spec), simulated)
    s = vary_seed(seed, spec)
    rng = random.Random(s)
    # every draw is made whether or not its kind is varied, so one kind's choice does not
    # depend on which others are on (`--vary font_scale` meets the font of `--vary light`)
    launcher, font, density = rng.randrange(1, 2**31), rng.choice(FONT_SCALES), rng.choice(DENSITIES)
    dark, h24 = rng.random() < 0.5, rng.random() < 0.5
    interruption, after = rng.choice(INTERRUPTIONS), rng.randrange(0, 3)
    counts = {kind: rng.randint(2, 4) for kind in DISTRACTORS}
    cards = (rng.randint(1, 3), rng.randrange(1, 2**31))
    choices = overlay_choices(task) or (1,)
    overlay = choices[rng.randrange(2**31) % len(choices)]
    on = set(kinds)
    return Variation(
        spec=spec, seed=s, kinds=kinds,
        launcher_seed=launcher if "launcher" in on else None,
        font_scale=font if "font_scale" in on else None,
        density=density if "display_size" in on else None,
        dark=dark if "dark" in on else None,
        clock_24h=h24 if "clock_24h" in on else None,
        interruption=interruption if "interruption" in on else None,
        interrupt_after=after if "interruption" in on else None,
        suggestions=cards if "suggestions" in on else None,
        values=overlay if "values" in on else None,
        distractors={k: n for k, n in counts.items() if k in task.scope.kinds} if "distractors" in on else {})


# -- what the phone is told ------------------------------------------------------------------------

def setup_commands(v: Variation, task: TaskInstance) -> list[str]:
    """Shell commands that make the varied phone, run after the task's setup."""
    cmds: list[str] = []
    if v.launcher_seed is not None:
        cmds.append(f"cmd vphone launcher-order {v.launcher_seed}")
    if v.font_scale is not None:
        cmds.append(f"settings put system font_scale {v.font_scale}")
    if v.density is not None:
        cmds.append(f"wm density {v.density}" if v.density != 420 else "wm density reset")
    if v.dark is not None:
        cmds.append(f"cmd uimode night {'yes' if v.dark else 'no'}")
    if v.clock_24h is not None:
        cmds.append(f"settings put system time_12_24 {24 if v.clock_24h else 12}")
    rng = random.Random(v.seed)
    for kind, n in v.distractors.items():
        cmds += DISTRACTORS[kind](rng, n, task)
    if v.suggestions is not None:
        cmds.append("cmd vphone suggestions %d %d" % v.suggestions)
    if v.interruption is not None:
        cmds.append(f"cmd vphone interrupt {v.interruption} {v.interrupt_after}")
    return cmds


def teardown_commands(v: Variation) -> list[str]:
    """What undoes the settings a variation set (its rows go with the next clean start)."""
    cmds: list[str] = []
    if v.launcher_seed is not None or v.interruption is not None or v.suggestions is not None:
        cmds.append("cmd vphone reset")
    if v.font_scale is not None:
        cmds.append("settings put system font_scale 1.0")
    if v.density is not None:
        cmds.append("wm density reset")
    if v.dark is not None:
        cmds.append("cmd uimode night no")
    if v.clock_24h is not None:
        cmds.append("settings delete system time_12_24")
    return cmds


def apply(task: TaskInstance, v: Variation) -> TaskInstance:
    """`task` (with its `vary.values` overlay, where the variation picked one) with the
    variation's commands after its setup and before its teardown."""
    if not v.kinds:
        return task
    if v.values is not None:
        task = with_values(task, v.values)
    setup = [*task.setup, *(ShellStep(shell=c) for c in setup_commands(v, task))]
    teardown = [*(ShellStep(shell=c) for c in teardown_commands(v)), *task.teardown]
    return task.model_copy(update={"setup": setup, "teardown": teardown})


# -- distractors: rows of other names, numbers and times that no task asks about ---------------------
# Numbers are in 650-555-02xx (tasks use 01xx), texts and calls read and from other numbers, events
# in May 2027 (tasks use December 2026 and January 2027), texts read, files not PDFs.

_NAMES = ("Abel Torres", "Bea Nakamura", "Mara Ortiz", "Zoe Keller", "Hana Sato", "Olu Adebayo",
          "Ines Duarte", "Kofi Mensah", "Yara Haddad", "Tomas Novak")
_BODIES = ("The library book is due Friday", "Thanks for lending me the ladder", "Sunny all weekend, finally",
           "Did you water the ferns?", "The new kettle works great", "Parking is free after six")
_EVENTS = ("Gutter cleaning", "Pottery workshop", "Chess meetup", "Kayak rental", "Tax advisor call", "Stargazing night")
_FILES = ("old-notes-2019.txt", "IMG_20190311_101500.jpg", "boarding-2019.txt", "mixtape.m3u", "scan-2019.png")
# Markor shows its notebook, /sdcard/Documents/Markor: its distractor notes go there
_FOLDER_INTO = {"/sdcard/Documents": "/sdcard/Documents/Markor"}
_OLD_MS = 1735689600000        # 2025-01-01: older than any task's own texts and calls
_SUITE_MORNING = (1764576000000, 1764581400000)   # 2025-12-01 08:00-09:30 UTC, when the tasks' own rows are


def _number(rng: random.Random) -> str:
    return f"65055502{rng.randrange(10, 100)}"


def _contacts(rng: random.Random, n: int, task: TaskInstance) -> list[str]:
    out = []
    for i, name in enumerate(rng.sample(_NAMES, n)):
        raw = 90 + i
        out += [f'content insert --uri content://com.android.contacts/data --bind raw_contact_id:i:{raw} '
                f'--bind mimetype:s:vnd.android.cursor.item/name --bind "data1:s:{name}"',
                f"content insert --uri content://com.android.contacts/data --bind raw_contact_id:i:{raw} "
                f"--bind mimetype:s:vnd.android.cursor.item/phone_v2 --bind data1:s:{_number(rng)} --bind data2:i:2"]
    return out


# A task that asks about recency ("the latest code", "whoever called me last") or whose check is
# an answer gets its distractor texts and calls older than its own rows, where they cannot change
# what it asks about; every other task gets them among its own rows, so the rows it acts on move
# down the list (a memorised position misses them).
_RECENCY = re.compile(r"\b(latest|last|most recent(ly)?|recent|just|earliest|first|newest|oldest)\b", re.I)
_DATE = re.compile(r"\bdate:l:(\d{12,})")


def older(task: TaskInstance) -> bool:
    """Its distractor texts and calls go older than all its rows: its `vary.distractors`, else
    where its check is an answer or its goal has a recency word (a newer row could change it)."""
    if task.vary_distractors is not None:
        return task.vary_distractors == "older"
    answers = task.check is not None and any(isinstance(c, AnswerCheck) for c in leaves(task.check))
    return answers or bool(_RECENCY.search(task.goal))


def _times(rng: random.Random, n: int, task: TaskInstance) -> list[int]:
    """When `n` distractor texts or calls happened: older than anything the task could ask
    about, or among the task's own rows (see `_RECENCY`)."""
    if older(task):
        return [_OLD_MS + i * 3_600_000 for i in range(n)]
    own = [int(d) for d in _DATE.findall("\n".join(texts_of([s.model_dump() for s in task.setup])))]
    if not own:
        return sorted(rng.randrange(*_SUITE_MORNING) // 60_000 * 60_000 for _ in range(n))
    # one newer than all of them, so every row the task acts on moves down (drawn anywhere, all
    # fell below the target on some seeds, and a replayed index still hit it)
    newest = max(own) // 60_000 * 60_000 + 60_000
    first = rng.randrange(newest, newest + 1_800_000) // 60_000 * 60_000
    return sorted([first, *(rng.randrange(min(own) - 1_800_000, newest + 1_800_000) // 60_000 * 60_000
                            for _ in range(n - 1))])


def _sms(rng: random.Random, n: int, task: TaskInstance) -> list[str]:
    rows = [f'content insert --uri content://sms/inbox --bind address:s:{_number(rng)} --bind "body:s:{body}" '
            f"--bind date:l:{when} --bind read:i:1"
            for body, when in zip(rng.sample(_BODIES, n), _times(rng, n, task))]
    return ["appops set com.android.shell WRITE_SMS allow", *rows, "appops set com.android.shell WRITE_SMS default"]


def _calls(rng: random.Random, n: int, task: TaskInstance) -> list[str]:
    return [f"content insert --uri content://call_log/calls --bind number:s:{_number(rng)} "
            f"--bind type:i:1 --bind date:l:{when} --bind duration:i:0"
            for when in _times(rng, n, task)]


def _calendar(rng: random.Random, n: int, task: TaskInstance) -> list[str]:
    out = []
    for i, title in enumerate(rng.sample(_EVENTS, n)):
        day, hour = 3 + 5 * i, rng.randrange(8, 18)
        out.append("content insert --uri content://com.android.calendar/events "
                   "--bind calendar_id:i:{phone.calendar_id} --bind eventTimezone:s:{phone.timezone} "
                   f'--bind "title:s:{title}" --bind dtstart:l:{{phone.time:2027-05-{day:02d}T{hour:02d}:00}} '
                   f"--bind dtend:l:{{phone.time:2027-05-{day:02d}T{hour + 1:02d}:00}}")
    return out


def _files(rng: random.Random, n: int, task: TaskInstance) -> list[str]:
    out = []
    for folder in task.scope.folders:
        into = _FOLDER_INTO.get(folder, folder)
        for name in rng.sample(_FILES, n):
            out += [f'mkdir -p "{into}"', f'echo "{name}" > "{into}/{name}"']
    return out


DISTRACTORS = {"contacts": _contacts, "sms": _sms, "calls": _calls, "calendar": _calendar, "files": _files}
