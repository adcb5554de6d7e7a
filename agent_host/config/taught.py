"""`split.json`: which task instances a taught model was taught on and which it was not.

`agent-host teach dataset` writes it beside the data (teach/split.py makes it); a run may name
it (`run --taught SPLIT.json`) so that its report can say which of its instances were taught.
Defined here, below every reader, because the teach verbs write it and the report reads it.

A split is by task instance (`alarm-set[0]`: a task's parameter set); a variant (`@verify`)
belongs to its instance. Each instance has one kind:
- `taught`: its reference solution's steps are in the training data;
- `held-out-params`: another parameter set of a taught task (same screens, other values);
- `held-out-task`: a task none of whose instances was taught.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent_host.config.loading import format_loc
from agent_host.config.records import read_regular
from agent_host.errors import UserError

SPLIT = "split.json"
Kind = Literal["taught", "held-out-params", "held-out-task"]
KINDS: tuple[Kind, ...] = ("taught", "held-out-params", "held-out-task")


def instance_id(key: str) -> str:
    """The instance a task instance key belongs to: `alarm-set[0]@verify` -> `alarm-set[0]`."""
    return key.split("@", 1)[0]


class TaughtSplit(BaseModel):
    """The split, the rule that made it, and the data it describes."""
    model_config = ConfigDict(extra="forbid")

    version: int = 1
    rule: str = Field(description="the rule in words (teach/split.py RULE)")
    seed: int = Field(description="the seed the rule hashed with")
    held_out_task_fraction: float = Field(ge=0, le=1)
    instances: dict[str, Kind] = Field(description="instance id -> its kind")
    tasks: dict[str, str] = Field(default_factory=dict, description="instance id -> its task id")
    data: dict[str, str] = Field(default_factory=dict, description="data file name -> its sha256")
    examples: dict[str, int] = Field(default_factory=dict, description="data file name -> its lines")

    def kind_of(self, key: str) -> Kind | None:
        """The kind of a task instance key (`@variant` allowed); None: not in the split."""
        return self.instances.get(instance_id(key))

    def count(self, kind: Kind) -> int:
        return sum(1 for k in self.instances.values() if k == kind)


def load_split(path: Path | str) -> TaughtSplit:
    """A split file; UserError naming the file and field when it is not one."""
    path = Path(path)
    try:
        return TaughtSplit.model_validate_json(read_regular(path))
    except FileNotFoundError:
        raise UserError(f"{path}: no such split file (`agent-host teach dataset` writes one)") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        raise UserError(f"{path}: {format_loc(first['loc'])}: {first['msg']}") from None
