"""`agent-host episode`: run one task on one phone against one OpenAI-compatible endpoint."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from agent_host.cli.locking import add_wait_flag, wait_seconds
from agent_host.config.observation import OBSERVATION_MODES, ObservationSpec
from agent_host.errors import UserError, check_dir_usable

if TYPE_CHECKING:
    from agent_host.config.builds import Sampling
    from agent_host.serving.endpoint import Endpoint
    from agent_host.config.phones import PhoneProfile
    from agent_host.config.tasks import TaskInstance

# The key from the environment, as `policy serve` takes AGENT_HOST_POLICY_API_KEY: a flag's
# value is in /proc/PID/cmdline for every user to read.
KEY_ENV = "AGENT_HOST_API_KEY"

EPILOG = """\
The outcome is one of: success, premature, undone, collateral (done, but something else in the
task's scope changed too), unrecognised, infeasible_claimed, nav_fail, exhausted (a harness
budget ran out: context window, reply token cap), error (docs/concepts.md says when each
applies). The episode folder holds steps.jsonl, step-NNN.png, episode.json and, where the task
has a scope of state, start_state.json.

examples:
  agent-host phone start                                   # prints serial: 127.0.0.1:P
  agent-host policy serve --script wifi.yaml --port 8009
  agent-host episode --task wifi-on --phone 127.0.0.1:P --base-url http://127.0.0.1:8009/v1 --model policy
  agent-host episode --task wifi-on --variant verify --phone 127.0.0.1:P \\
      --base-url http://127.0.0.1:8000/v1 --model Qwen2.5-1.5B-Instruct --json
  agent-host episode --task tasks/contact-add.yaml --phone SERIAL --base-url URL --model NAME --out runs/ep1
  AGENT_HOST_API_KEY=... agent-host episode --task wifi-on --phone SERIAL --base-url URL --model NAME
                                                           # a key: from the environment, not argv
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("episode", help="run one task on a phone against an OpenAI-compatible endpoint",
                       description="Run one episode (setup, the model's steps, teardown), judge it "
                                   "after every step, and print its outcome.",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", required=True, metavar="ID_OR_FILE",
                   help="a task id or instance id from tasks/ (wifi-on, alarm-set[0], wifi-on@verify), or a task file")
    p.add_argument("--variant", choices=("base", "verify"), default=None,
                   help="base (default) or verify: the goal already holds, the agent must recognise it")
    p.add_argument("--phone", required=True, metavar="SERIAL", help="adb serial, e.g. 127.0.0.1:5601")
    p.add_argument("--base-url", required=True, help="OpenAI-compatible base URL, ending in /v1")
    p.add_argument("--model", required=True, help="the served model name")
    p.add_argument("--api-key", default=None,
                   help=f"bearer token (default: the environment variable {KEY_ENV}, else none); the "
                        "environment is safer: a flag is visible to every user in the process list")
    p.add_argument("--profile", default="virtual",
                   help="phone profile: a name in device_profiles/phones or a file (default virtual)")
    p.add_argument("--out", default=None, metavar="DIR", help="episode folder (default: a new temporary folder)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed sent with every model request and recorded in the episode (default 0)")
    p.add_argument("--repeat", type=int, default=0, help="repeat index recorded in the episode id")
    p.add_argument("--temperature", type=float, default=None, help="sampling temperature (default 0)")
    p.add_argument("--max-tokens", type=int, default=None, help="max tokens per reply (default 256)")
    p.add_argument("--build", default="", help="build id recorded in the episode (default: the model name)")
    p.add_argument("--request-timeout", type=float, default=120.0, metavar="S",
                   help="seconds one model request may take; then the episode ends error (default 120)")
    p.add_argument("--episode-timeout", type=float, default=None, metavar="S",
                   help="wall-clock seconds the episode may take (default: no limit)")
    p.add_argument("--no-screenshots", action="store_true", help="do not save step screenshots")
    p.add_argument("--observation", choices=OBSERVATION_MODES, default="text",
                   help="what the model is shown of the screen (docs/builds.md, Vision builds; default: text)")
    p.add_argument("--coordinates", choices=("pixels", "normalized"), default=None,
                   help="offer tap_xy/long_press_xy/swipe_xy in this frame (default: pixels for image observations)")
    p.add_argument("--max-pixels", type=int, default=None, metavar="N", help="shrink the screenshot to at most N pixels")
    p.add_argument("--long-side", type=int, default=None, metavar="PX", help="shrink the screenshot's long side to PX")
    p.add_argument("--history-images", type=int, default=1, metavar="N", help="screenshots kept in a prompt (default 1)")
    p.add_argument("--json", action="store_true", help="print one JSON object (the episode record)")
    p.add_argument("--quiet", action="store_true", help="no per-step lines on stderr")
    add_wait_flag(p)
    p.set_defaults(func=_run)


def api_key(args: argparse.Namespace) -> str:
    """--api-key, else the environment (as `policy serve` reads AGENT_HOST_POLICY_API_KEY),
    else "none" (an endpoint that wants no key)."""
    return args.api_key or os.environ.get(KEY_ENV, "").strip() or "none"


def resolve_task(spec: str, variant: str | None):
    """A TaskInstance for an id / instance id / key, or a file (its only instance, or the first)."""
    from agent_host.config.tasks import load_tasks

    key_variant = "verify" if spec.endswith("@verify") else None
    if key_variant and variant == "base":
        raise UserError(f"--task {spec} names the verify variant; drop --variant base")
    want = variant or key_variant or "base"
    try:
        tasks = load_tasks([spec], [want])
    except UserError:
        if want == "verify" and not key_variant and load_tasks([spec], ["base"]):
            raise UserError(f"task {spec!r} has no verify variant (infeasible, or verify: false)") from None
        raise
    tasks = [t for t in tasks if t.variant == want]
    if not tasks:
        raise UserError(f"task {spec!r} has no {want} variant")
    if len(tasks) > 1:
        names = ", ".join(t.key for t in tasks)
        if Path(spec).exists():
            raise UserError(f"{spec} holds several task instances ({names}); give one of their ids")
        raise UserError(f"task {spec!r} has several instances ({names}); give one of them")
    return tasks[0]


def _run(args: argparse.Namespace) -> int:
    from agent_host.agent.episode import run_episode
    from agent_host.config.builds import Sampling, check_http_url
    from agent_host.config.phones import load_phone_profile
    from agent_host.phone.device import Phone, PhoneError
    from agent_host.serving.endpoint import Endpoint
    from pydantic import ValidationError

    task = resolve_task(args.task, args.variant)
    for flag, value in (("--request-timeout", args.request_timeout), ("--episode-timeout", args.episode_timeout)):
        if value is not None and not 0 < value <= 7 * 86400:
            raise UserError(f"{flag} must be more than 0 and at most {7 * 86400} seconds")
    profile = load_phone_profile(args.profile)
    try:   # before the phone is set up: a malformed URL would fail only at the first request
        check_http_url(args.base_url)
    except ValueError as exc:
        raise UserError(f"--base-url: {exc}") from None
    base_url = args.base_url.rstrip("/")
    if not base_url.endswith("/v1"):
        base_url += "/v1"
    endpoint = Endpoint(base_url, api_key(args), args.model, args.build or args.model)
    try:
        sampling = Sampling(**{k: v for k, v in (("temperature", args.temperature), ("max_tokens", args.max_tokens))
                               if v is not None})
    except ValidationError as exc:
        first = exc.errors()[0]
        field = "--" + "-".join(str(x) for x in first.get("loc", ())).replace("_", "-")
        raise UserError(f"{field}: {first.get('msg')}") from None
    if args.out:
        check_dir_usable(args.out, "--out")
    observation(args)    # its flags checked before the phone is touched
    from agent_host.runs.phone_lock import PhoneLocks
    with PhoneLocks([args.phone], wait=wait_seconds(args)):
        return _episode_on(args, task, profile, endpoint, sampling)


def observation(args: argparse.Namespace) -> ObservationSpec:
    """The flags as a Build's observation fields, checked by its model (one place for the bounds)."""
    from agent_host.config.builds import Build
    from pydantic import ValidationError

    fields = {"observation": args.observation, "coordinates": args.coordinates, "max_pixels": args.max_pixels,
              "long_side": args.long_side, "history_images": args.history_images}
    try:
        return Build(id="episode", weight_path="-", server="openai", **fields).observation_spec()
    except ValidationError as exc:
        first = exc.errors()[0]
        raise UserError(f"--{str(first['loc'][0]).replace('_', '-')}: {first['msg']}") from None


def _episode_on(args: argparse.Namespace, task: TaskInstance, profile: PhoneProfile, endpoint: Endpoint, sampling: Sampling | None) -> int:
    from agent_host.agent.episode import run_episode
    from agent_host.phone.device import Phone, PhoneError
    try:
        phone = Phone.connect(args.phone)
    except PhoneError as exc:
        raise UserError(f"phone {args.phone}: {exc} (is it listed by `adb devices`?)") from None
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix=f"agent-host-{task.id}-"))

    def show(step) -> None:
        if args.quiet:
            return
        a = step.action
        what = "(setup)" if step.step == 0 else (
            f"{a.name}({', '.join(f'{k}={v!r}' for k, v in a.args.items())})" if a else "no valid tool call")
        if a is not None and a.error:
            what += f"  error: {a.error}"
        print(f"step {step.step:>3}  goal={'yes' if step.goal else 'no ':<3}  {what}", file=sys.stderr, flush=True)

    rec = run_episode(task, phone, endpoint, out_dir=out, profile=profile, seed=args.seed,
                      sampling=sampling, build_id=args.build or args.model, repeat=args.repeat,
                      on_step=show, screenshots=not args.no_screenshots,
                      request_timeout=args.request_timeout, episode_timeout=args.episode_timeout,
                      observation=observation(args))
    if args.json:
        print(json.dumps({**rec.model_dump(mode="json"), "episode_dir": str(out)}, ensure_ascii=False))
    else:
        print(summary(rec, out))
    return 0


def summary(rec, out: Path) -> str:
    def step(v):
        return "-" if v is None else str(v)

    lines = [
        f"{rec.task} ({rec.variant}) on {rec.phone} with {rec.model}: {rec.outcome.upper()}",
        f"  goal after setup: {'yes' if rec.goal_initial else 'no'};  first held at step {step(rec.goal_first_step)};"
        f"  lost at step {step(rec.goal_lost_step)};  at the end: {'yes' if rec.goal_final else 'no'}",
        f"  task_complete at step {step(rec.complete_step)};  task_infeasible at step {step(rec.infeasible_step)};"
        f"  steps {rec.steps}/{rec.max_steps} ({rec.wasted_steps} wasted)",
        f"  time {rec.wall_s:.1f} s (model {rec.times.model:.1f} s);  tokens {rec.usage.prompt_tokens} prompt"
        f" ({rec.usage.cached_tokens or 0} cached), {rec.usage.completion_tokens} completion",
    ]
    if rec.reason:
        lines.append(f"  reason: {rec.reason}")
    if rec.error:
        lines.append(f"  error: {rec.error}")
    lines.append(f"  episode folder: {out}")
    return "\n".join(lines)
