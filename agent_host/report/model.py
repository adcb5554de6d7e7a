"""The typed shape of results.json: what `analyse` produces is validated against it before it
is written, and `load_results` reads a results.json back into it. Fields added since schema 1
have defaults, so an older results.json still loads; unknown keys are kept (extra="allow").
Keys renamed since are read under their old name too (`_renamed`), and written under the new.
Labels added since (schema 5: `collateral` in a build's `outcomes` and `rates`) are absent from
older files, not zero: their judge could not tell them; the tables show "–" there."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, List

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, model_validator

from agent_host.config.requests import Json
from agent_host.errors import UserError


# Any: any JSON-like value; the same shape comes back (tuples as lists), NaN and infinities as None
def finite(x: Any) -> Any:
    """The same structure with NaN and infinities as None, so the JSON is strict."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [finite(v) for v in x]
    return x


class _M(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


# Any: pydantic's Field() is typed Any, so that it can stand as the default of a field of any type
def _renamed(new: str, old: str) -> Any:
    """A field that schema 3 and earlier wrote as `old` (schema 4 renamed the task instance's
    `unit` and `units` to `instance` and `instances`: the report's unit is the task)."""
    return Field(validation_alias=AliasChoices(new, old))


class Rate(_M):
    mean: float | None
    low: float | None
    high: float | None
    n_tasks: int                  # tasks (clusters: a task's instances pooled)
    k: int
    n: int
    method: str = ""
    n_instances: int | None = None


class Errors(_M):
    episodes: int
    attempts: int
    retried_ok: int


class ExhaustedEpisode(_M):
    episode_id: str
    instance: str = _renamed("instance", "unit")
    kind: str
    step: int
    tokens: int | None = None
    limit: int | None = None


class Exhausted(_M):
    episodes: int = 0
    kinds: dict[str, int] = Field(default_factory=dict)
    list: List[ExhaustedEpisode] = Field(default_factory=lambda: [])   # noqa: UP006 (field named list)


class Share(_M):
    count: int
    fraction: float | None


class PassK(_M):
    k: int
    value: float | None
    n_tasks: int


class TaskBuild(_M):
    k: int
    n: int
    rate: float | None
    low: float | None
    high: float | None
    errors: int


class InstanceRow(TaskBuild):
    """One task instance's tally within a build."""
    task: str
    variant: str
    infeasible: bool


class Speed(_M):
    episodes: int
    steps: int
    decode_tok_s: float | None = None
    decode_source: str | None = None
    ttft_s: float | None = None
    server_metrics: bool = False
    step_s: float | None = None
    model_s_per_step: float | None = None
    episode_wall_s: float | None = None
    tokens_per_episode: float | None = None
    prompt_tokens_per_episode: float | None = None
    completion_tokens_per_episode: float | None = None
    prompt_tokens_per_step: float | None = None    # results.json before it: absent
    image_tokens_per_step: float | None = None     # likewise; None for a text build
    phase_s_per_step: dict[str, float] | None = None
    scripted: bool = False          # a policy build: no decode speed to measure


class Balanced(_M):
    """(sensitivity + specificity) / 2 with its interval (report/detector.py)."""
    mean: float | None
    low: float | None = None
    high: float | None = None
    method: str = ""
    n_tasks_sensitivity: int = 0
    n_tasks_specificity: int = 0


class BuildSummary(_M):
    build: str
    tasks: int
    episodes: int
    instances: int | None = None
    repeats_max: int
    repeats_min: int
    errors: Errors
    exhausted: Exhausted = Field(default_factory=Exhausted)
    rates: dict[str, Rate]
    pass_hat_k: list[PassK]
    pass_at_k: list[PassK]
    outcomes: dict[str, Share]
    per_task: dict[str, InstanceRow]
    speed: Speed | None = None
    balanced: Balanced | None = None

    @model_validator(mode="before")
    @classmethod
    def _schema_2(cls, data: Any) -> Any:   # Any: a before-validator gets and returns the input as given
        """Schema 2 named sensitivity `recognition_verify` (the same count: success on verify
        variants). Its `success` included verify variants; the value is kept as written."""
        if isinstance(data, dict) and isinstance(data.get("rates"), dict):
            rates = data["rates"]
            if "recognition_verify" in rates and "sensitivity" not in rates:
                data = {**data, "rates": {**rates, "sensitivity": rates["recognition_verify"]}}
        return data


class TaskRow(_M):
    """One task instance across builds (the per-task table)."""
    instance: str = _renamed("instance", "unit")
    task: str
    variant: str
    infeasible: bool
    builds: dict[str, TaskBuild]


class GroupBuild(Rate):
    """A build's success headline on one group of tasks."""
    episodes: int


class GroupRow(_M):
    """One task kind or app (the breakdown table)."""
    by: str                         # "kind", "app" or "taught"
    group: str
    instances: list[str] = _renamed("instances", "units")
    builds: dict[str, GroupBuild]


class SignFlip(_M):
    p: float | None
    method: str
    n_nonzero: int
    patterns: int


class McNemar(_M):
    p: float
    pairs: int
    baseline_only: int
    build_only: int
    both: int
    neither: int
    unpaired: int
    method: str


class Mde(_M):
    value: float | None
    method: str
    approx: float | None = None
    note: str | None = None


class Needed(_M):
    target: float
    tasks: int | None = None
    repeats: int | None = None
    note: str | None = None


class Comparison(_M):
    build: str
    baseline: str
    n_tasks: int
    only_baseline: list[str]
    n_instances: int | None = None
    only_build: list[str]
    mean_diff: float | None
    low: float | None
    high: float | None
    sd: float | None
    method: str = ""
    per_task: dict[str, float]
    sign_flip: SignFlip
    mcnemar: McNemar | None
    won: int
    lost: int
    tied: int
    mde: Mde
    needed: Needed | None = None


class PlanNeeded(_M):
    target: float
    tasks: int | None = None
    repeats: int | None = None


class Power(_M):
    tasks: int
    repeats: int
    instances: float = 1.0          # task instances per task
    assumed: dict[str, float]
    mde: float | None
    needed: PlanNeeded


class TrivialPolicy(_M):
    """What a policy that does nothing scores on the run's tasks (report/trivial.py)."""
    name: str
    success: float | None
    sensitivity: float | None = None
    specificity: float | None = None
    balanced: float | None = None
    n_tasks: int = 0


class Trivial(_M):
    instances: int
    policies: dict[str, TrivialPolicy]


class RobustnessRow(_M):
    """One build under one varied condition, paired with its unvaried episodes."""
    build: str
    condition: str
    plain: float | None = None       # success without variations, over the common instances
    varied: float | None = None      # success with them
    diff: float | None = None        # varied - plain (the robustness gap; negative: variations cost)
    low: float | None = None
    high: float | None = None
    n_tasks: int = 0
    n_instances: int = 0
    method: str = ""


class KindRow(_M):
    """What one kind of variation did to one build's paired base episodes."""
    build: str
    kind: str
    pairs: int
    caused: int                      # success unvaried, not with this kind
    fixed: int                       # the reverse
    instances: list[str] = Field(default_factory=list)   # where it caused a failure


class BlindReplay(_M):
    """A blind replay of recorded calls (runs/blind_replay.py): its success on base instances,
    as episodes and as the headline is counted (the mean of per-task rates, with its interval)."""
    episodes: int
    success: int
    rate: float
    vary: str = ""
    mean: float | None = None         # results.json written before the headline was added lack these
    low: float | None = None
    high: float | None = None
    n_tasks: int = 0


class Robustness(_M):
    """report/robustness.py: success with and without variations, per kind, blind replay."""
    conditions: list[str]
    primary: str
    rows: list[RobustnessRow] = Field(default_factory=list)
    kinds: list[KindRow] = Field(default_factory=list)
    blind: BlindReplay | None = None
    note: str = ""


class Results(_M):
    schema_: str = Field(alias="schema")
    power: Power | None = None
    generated_at: str
    provenance: dict[str, Any]
    baseline: str
    headline: list[str] = Field(default_factory=list)   # the first lines, in words (results.headline)
    builds: list[BuildSummary]
    per_task: list[TaskRow]
    comparisons: list[Comparison]
    breakdown: list[GroupRow] = Field(default_factory=list)
    sequential: dict[str, Any] | None = None    # report/sequential.section: how a sequential run ended
    trivial: Trivial | None = None          # schema 3
    robustness: Robustness | None = None    # a run of several --vary conditions, or with a blind replay
    max_repeats: int
    totals: dict[str, int]
    statistics: dict[str, Any]
    warnings: list[str]

    def as_dict(self) -> Json:
        """The JSON form (what results.json holds and the templates read)."""
        return self.model_dump(mode="json", by_alias=True)


def load_results(path: str | Path) -> Results:
    """A results.json read back into the model; a bad file is an error naming path and field."""
    path = Path(path)
    try:
        from agent_host.config.records import read_regular   # a FIFO is refused, not waited on
        return Results.model_validate(json.loads(read_regular(path).decode("utf-8")))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read results: {exc}") from None
    except ValidationError as exc:
        e = exc.errors()[0]
        where = ".".join(str(x) for x in e.get("loc", ())) or "file"
        raise UserError(f"{path}: {where}: {e.get('msg')}") from None
