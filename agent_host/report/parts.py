"""The parts of results.json as stats.py, power.py, detector.py, speed.py and trivial.py make
them: each a TypedDict, so a part is checked where it is computed and is still the JSON form
that model.Results validates (model.py names the same fields; `analyse` builds the model from
these). Dicts rather than models because their readers index them (bench/replay.py, cli/run.py,
the demo's headline) and replay.json writes them as they are, keys in the order made here."""

from __future__ import annotations

from typing import NotRequired, TypedDict


class TInterval(TypedDict):
    """stats.t_interval: a mean with its t interval (None where too few values give one)."""
    mean: float | None
    low: float | None
    high: float | None
    n: int
    sd: float | None


class RatePart(TypedDict):
    """stats.rows_summary (model.Rate)."""
    mean: float | None
    low: float | None
    high: float | None
    n_tasks: int
    n_instances: int
    k: int
    n: int
    method: str


class PassKPart(TypedDict):
    k: int
    value: float | None
    n_tasks: int


class ErrorsPart(TypedDict):
    episodes: int
    attempts: int
    retried_ok: int


class ExhaustedEpisodePart(TypedDict):
    episode_id: str
    instance: str
    kind: str
    step: int
    tokens: int | None
    limit: int | None


# the key `list` (model.Exhausted) is a builtin's name: the functional form
ExhaustedPart = TypedDict("ExhaustedPart", {"episodes": int, "kinds": dict[str, int],
                                            "list": list[ExhaustedEpisodePart]})


class SharePart(TypedDict):
    count: int
    fraction: float | None




class BalancedPart(TypedDict):
    """detector.balanced (model.Balanced)."""
    mean: float
    low: float
    high: float
    method: str
    n_tasks_sensitivity: int
    n_tasks_specificity: int


class SpeedPart(TypedDict):
    """speed.speed_summary (model.Speed); `scripted` is added by results.analyse."""
    episodes: int
    steps: int
    decode_tok_s: float | None
    decode_source: str | None
    ttft_s: float | None
    server_metrics: bool
    step_s: float | None
    model_s_per_step: float | None
    episode_wall_s: float | None
    tokens_per_episode: float | None
    prompt_tokens_per_episode: float | None
    completion_tokens_per_episode: float | None
    prompt_tokens_per_step: float | None
    image_tokens_per_step: float | None
    cached_share: float | None
    phase_s_per_step: dict[str, float] | None
    scripted: NotRequired[bool]


class BuildSummaryPart(TypedDict):
    """stats.build_summary (model.BuildSummary); `speed` is added by results.analyse."""
    build: str
    tasks: int
    instances: int
    episodes: int
    repeats_max: int
    repeats_min: int
    errors: ErrorsPart
    exhausted: ExhaustedPart
    rates: dict[str, RatePart]
    balanced: BalancedPart | None
    pass_hat_k: list[PassKPart]
    pass_at_k: list[PassKPart]
    outcomes: dict[str, SharePart]
    per_task: dict[str, InstanceRowPart]
    speed: NotRequired[SpeedPart]


class SignFlipPart(TypedDict):
    p: float | None
    method: str
    n_nonzero: int
    patterns: int


class McNemarPart(TypedDict):
    p: float
    pairs: int
    baseline_only: int
    build_only: int
    both: int
    neither: int
    unpaired: int
    method: str


class MdePart(TypedDict):
    """power.min_detectable_effect (model.Mde); `approx` where the noncentral t was solved."""
    value: float | None
    method: str
    approx: NotRequired[float]
    note: str | None


class NeededPart(TypedDict):
    """power.design_needed and plan_needed (model.Needed, model.PlanNeeded)."""
    target: float
    tasks: int | None
    repeats: int | None
    note: NotRequired[str | None]


class ComparisonPart(TypedDict):
    """stats.compare (model.Comparison)."""
    build: str
    baseline: str
    n_tasks: int
    n_instances: int
    only_baseline: list[str]
    only_build: list[str]
    mean_diff: float | None
    low: float | None
    high: float | None
    sd: float | None
    method: str
    per_task: dict[str, float]
    sign_flip: SignFlipPart
    mcnemar: McNemarPart | None
    won: int
    lost: int
    tied: int
    mde: MdePart
    needed: NeededPart


class Assumed(TypedDict):
    rate: float
    icc: float
    tau: float


class PlanPart(TypedDict):
    """power.plan: what a design detects under the planning assumptions."""
    tasks: int
    repeats: int
    instances: float
    assumed: Assumed
    sd: float
    mde: MdePart
    by_repeats: dict[int, float | None]
    by_tasks: dict[int, float | None]


class PowerPart(TypedDict):
    """results.design_power (model.Power)."""
    tasks: int
    repeats: int
    instances: float
    assumed: Assumed
    mde: float | None
    needed: NeededPart


class TrivialPolicyPart(TypedDict):
    name: str
    success: float | None
    sensitivity: float | None
    specificity: float | None
    balanced: float | None
    n_tasks: int


class TrivialPart(TypedDict):
    """trivial.trivial_scores (model.Trivial)."""
    instances: int
    policies: dict[str, TrivialPolicyPart]


class GroupBuildPart(RatePart):
    """A build's success on one group of tasks (breakdown.py; model.GroupBuild)."""
    episodes: int


class GroupRowPart(TypedDict):
    """breakdown.breakdown (model.GroupRow)."""
    by: str
    group: str
    instances: list[str]
    builds: dict[str, GroupBuildPart]


class InstanceFacts(TypedDict):
    """A task instance as trivial.py scores it."""
    task: str
    task_id: str | None
    variant: str
    infeasible: bool
    phone: NotRequired[str]    # "{vary}/{repeat}/{seed}": the episode phone that decided `infeasible`


class TaskBuildPart(TypedDict):
    k: int
    n: int
    rate: float | None
    low: float | None
    high: float | None
    errors: int


class InstanceRowPart(TaskBuildPart):
    """stats.instance_row: a task build cell with the instance it is of."""
    task: str
    variant: str
    infeasible: bool


class TaskRowPart(TypedDict):
    """results._per_task (model.TaskRow)."""
    instance: str
    task: str
    variant: str
    infeasible: bool
    builds: dict[str, TaskBuildPart]
