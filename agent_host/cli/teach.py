"""`agent-host teach`: the dataset from the suite's reference solutions, LoRA training of the
embedded model on it, and merging the adapter into a checkpoint vLLM serves (docs/teach.md)."""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING

from agent_host.errors import UserError, check_dir_usable

if TYPE_CHECKING:
    from agent_host.config.records import EpisodeRecord
    from agent_host.config.tasks import TaskInstance

DESCRIPTION = """\
Teach a small model this harness from the suite's own reference solutions (docs/teach.md).

  dataset  play every task instance's reference solution (a virtual phone by default) and
           write each step's request and solving call as chat JSONL, split by instance into
           taught (train.jsonl) and held-out (held_out.jsonl), with split.json beside them
  train    LoRA (peft) on the embedded smollm2-135m over train.jsonl, on this CPU
  merge    the adapter merged into its base: a full fp32 safetensors checkpoint vLLM serves
"""

EXAMPLES = """\
examples:
  agent-host teach dataset --out teach-data
  agent-host teach dataset --out teach-data --vary light --seeds 3
  agent-host teach train teach-data --out teach-adapter
  agent-host teach merge teach-adapter --out teach-merged
  agent-host quantize teach-merged teach-merged-w4a16
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("teach", help="a dataset from the reference solutions; LoRA training; merging",
                       description=DESCRIPTION, epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.set_defaults(func=lambda a: (p.print_help(), 2)[1])
    verbs = p.add_subparsers(dest="teach_verb", metavar="<command>")

    d = verbs.add_parser("dataset", help="play the reference solutions; write chat JSONL and the split",
                         description="Play each task instance's reference solution (base and verify variants) "
                                     "and write every step as one chat example: the request the harness sent "
                                     "and the call that solved it. Instances are split by a seeded rule "
                                     "(docs/teach.md) into taught (train.jsonl) and held-out (held_out.jsonl); "
                                     "split.json records the split and each file's sha256.",
                         epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    d.add_argument("tasks", nargs="*", metavar="TASK", help="task ids, files or directories (default: tasks/)")
    d.add_argument("--out", required=True, metavar="DIR", help="the dataset directory (new or empty)")
    d.add_argument("--seed", type=int, default=0, help="the split's seed (default 0)")
    d.add_argument("--held-out-tasks", type=float, default=None, metavar="FRACTION",
                   help="the fraction of tasks held out whole (default 0.2)")
    d.add_argument("--vary", metavar="CONDITION", default="none",
                   help="also play each instance on phones varied so (light, full, kinds joined by '+'), "
                        "--seeds times, beside the plain play")
    d.add_argument("--seeds", type=int, default=1, metavar="N", help="varied plays per instance (with --vary)")
    d.add_argument("--phone", metavar="SERIAL", help="a running phone (default: start a virtual phone)")
    from agent_host.cli.locking import add_wait_flag
    add_wait_flag(d)
    d.set_defaults(func=_dataset)

    t = verbs.add_parser("train", help="LoRA on an embedded model over a dataset's train.jsonl, on this CPU",
                         description="LoRA (peft) on an embedded model (default smollm2-135m) over a teach "
                                     "dataset's train.jsonl, the loss on the assistant turn only, seeded; bf16 "
                                     "autocast where the CPU has fast bf16. Writes the adapter, training.json "
                                     "(command, data sha256, seed, hyperparameters, tokens, speed, machine, loss "
                                     "curve) and loss.png.",
                         epilog=EXAMPLES + "  agent-host teach train teach-data --out /tmp/a --max-steps 20   "
                                           "# measure the speed\n",
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    t.add_argument("dataset", metavar="DATASET", help="a `teach dataset` directory, or a JSONL file of examples")
    t.add_argument("--out", required=True, metavar="DIR", help="the adapter directory (new or empty)")
    t.add_argument("--base", default="smollm2-135m", help="the embedded model to adapt (default smollm2-135m)")
    t.add_argument("--seed", type=int, default=0, help="the sequence order and the LoRA initialisation (default 0)")
    t.add_argument("--epochs", type=float, default=1.0, help="passes over the data (default 1; fractions allowed)")
    t.add_argument("--max-steps", type=int, default=None, metavar="N", help="stop after N optimizer steps")
    t.add_argument("--batch", type=int, default=8, metavar="N", help="sequences per optimizer step (default 8)")
    t.add_argument("--pack", choices=("episode", "step"), default="episode",
                   help="episode (default): one sequence per episode, the loss on each step's reply; "
                        "step: one sequence per example (exact per-request tokens, several times the tokens)")
    t.add_argument("--lr", type=float, default=2e-4, help="peak learning rate (default 2e-4; 5%% warm-up, linear decay)")
    t.add_argument("--rank", type=int, default=16, help="LoRA rank (default 16; alpha is twice it)")
    t.add_argument("--max-tokens", type=int, default=8192, metavar="N",
                   help="leave out examples longer than N tokens (default 8192, the builds' context)")
    t.add_argument("--fp32", action="store_true", help="no bf16 autocast even where the CPU has fast bf16")
    t.add_argument("--no-checkpointing", action="store_true",
                   help="keep every layer's activations for the backward pass: about a quarter faster, "
                        "several times the memory (by default they are recomputed: 8192-token sequences "
                        "need about 19 GB without it)")
    t.set_defaults(func=_train)

    m = verbs.add_parser("merge", help="merge an adapter into its base: a checkpoint vLLM serves",
                         description="Merge a `teach train` adapter into the embedded model it was trained on: "
                                     "a full fp32 safetensors checkpoint with the base's tokenizer and chat "
                                     "template, served by vLLM and quantized by `agent-host quantize`.",
                         epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    m.add_argument("adapter", metavar="ADAPTER", help="a `teach train` output directory")
    m.add_argument("--out", required=True, metavar="DIR", help="the merged checkpoint's directory (must not exist)")
    m.set_defaults(func=_merge)


def _dataset(args: argparse.Namespace) -> int:
    from agent_host.cli.locking import wait_seconds
    from agent_host.cli.tasks_check import _check_vary, select_tasks

    check_dir_usable(args.out, "--out")
    out = Path(args.out)
    if out.exists() and any(out.iterdir()):
        raise UserError(f"--out {out}: not empty (a dataset is written whole, into a new directory)")
    fraction = 0.2 if args.held_out_tasks is None else args.held_out_tasks
    if not 0 <= fraction < 1 or math.isnan(fraction):
        raise UserError(f"--held-out-tasks must be in [0, 1) (got {fraction})")
    _check_vary(args.vary, args.seeds)
    tasks = select_tasks(list(args.tasks))
    if not tasks:
        raise UserError("no task has a solution to play")
    if args.phone:
        from agent_host.runs.phone_lock import PhoneLocks
        with PhoneLocks([args.phone], wait=wait_seconds(args)):
            return _dataset_on(args, tasks, out, fraction, args.phone)
    return _dataset_on(args, tasks, out, fraction, None)


def _dataset_on(args: argparse.Namespace, tasks: list[TaskInstance], out: Path, fraction: float,
                serial: str | None) -> int:
    from agent_host.cli.output import stdout_console
    from agent_host.cli.phone import serial_or_virtual
    from agent_host.cli.steps import step_progress
    from agent_host.cli.tasks_check import check, expected_outcome
    from agent_host.config.phones import load_phone_profile
    from agent_host.config.requests import Json
    from agent_host.teach.dataset import episode_examples, write_dataset
    from agent_host.teach.split import choose_split

    console = stdout_console()
    profile = load_phone_profile("virtual" if serial is None else getattr(args, "profile", None) or "virtual")
    split = choose_split(tasks, seed=args.seed, held_out_task_fraction=fraction)
    plays = [("none", 1)] + ([(args.vary, args.seeds)] if args.vary != "none" else [])
    total = sum(len(tasks) * n for _, n in plays)
    examples: list[Json] = []
    failed: list[str] = []
    t0 = time.monotonic()
    with serial_or_virtual(serial, console.print) as phone, step_progress("teach dataset", console) as progress:
        done = 0
        for vary, seeds in plays:
            def take(task: TaskInstance, rec: EpisodeRecord, folder: Path, vary: str = vary) -> None:
                nonlocal done
                done += 1
                progress.update(done, total, task.key)
                if rec.outcome != expected_outcome(rec):
                    failed.append(f"{task.key} ({vary}, seed {rec.repeat}): {rec.outcome}")
                    return
                kind = split.kind_of(task.key) or "taught"
                examples.extend(episode_examples(folder, key=task.key, task_id=task.task_id, kind=kind,
                                                 seed=rec.repeat, vary=vary))
            check(tasks, phone, out_root=out / "episodes" / vary.replace("+", "_"), profile=profile,
                  on_result=take, vary=vary, seeds=seeds)
    split = write_dataset(out, examples, split)
    counts = ", ".join(f"{split.count(k)} {k}" for k in ("taught", "held-out-params", "held-out-task"))
    console.print(f"{total} episodes in {time.monotonic() - t0:.0f} s; instances: {counts}; examples: "
                  f"{split.examples['train.jsonl']} taught (train.jsonl), {split.examples['held_out.jsonl']} "
                  f"held out (held_out.jsonl); split: {out / 'split.json'}", soft_wrap=True)
    if failed:
        console.print(f"{len(failed)} reference solutions did not succeed; their steps are left out: "
                      + "; ".join(failed), soft_wrap=True)
        return 1
    return 0


def _train(args: argparse.Namespace) -> int:
    import sys

    from agent_host.cli.output import stdout_console
    from agent_host.cli.steps import step_progress
    from agent_host.config.secrets import redact_argv
    from agent_host.teach.train import TrainOptions, dataset_file, train

    check_dir_usable(args.out, "--out")
    out = Path(args.out)
    if out.exists() and any(out.iterdir()):
        raise UserError(f"--out {out}: not empty")
    for flag, value, low in (("--batch", args.batch, 1), ("--rank", args.rank, 1), ("--max-tokens", args.max_tokens, 16),
                             ("--max-steps", args.max_steps if args.max_steps is not None else 1, 1)):
        if value < low:
            raise UserError(f"{flag} must be at least {low} (got {value})")
    if not (args.epochs > 0 and args.lr > 0):
        raise UserError("--epochs and --lr must be positive")
    dataset_file(Path(args.dataset))
    opts = TrainOptions(base=args.base, seed=args.seed, epochs=args.epochs, max_steps=args.max_steps,
                        batch=args.batch, pack=args.pack, lr=args.lr, rank=args.rank, alpha=2 * args.rank,
                        max_tokens=args.max_tokens, bf16=False if args.fp32 else None,
                        checkpointing=not args.no_checkpointing,
                        command=redact_argv(["agent-host", *sys.argv[1:]]))
    console = stdout_console()
    with step_progress("teach train", console) as progress:
        record = train(Path(args.dataset), out, opts, progress=progress.update)
    d = record["data"]
    console.print(f"{record['steps']} steps of {opts.batch} sequences ({record['tokens_seen']} tokens) in "
                  f"{record['wall_seconds']:.0f} s: {record['tokens_per_s']:.0f} tok/s, {record['seconds_per_step']:.1f} "
                  f"s/step; one epoch ({record['steps_per_epoch']} steps, {d['tokens']} tokens) projected at "
                  f"{record['epoch_seconds_projected'] / 60:.0f} min on {record['machine']['cpu_model']} "
                  f"({record['torch_threads']} threads, bf16 autocast {'on' if record['bf16_autocast'] else 'off'}); "
                  f"loss {record['loss_curve'][0]['loss']:.3f} -> {record['loss_curve'][-1]['loss']:.3f}. "
                  f"Adapter: {out}", soft_wrap=True)
    return 0


def _merge(args: argparse.Namespace) -> int:
    from agent_host.cli.output import stdout_console
    from agent_host.teach.merge import adapter_facts, merge

    adapter, out = Path(args.adapter), Path(args.out)
    adapter_facts(adapter)
    check_dir_usable(args.out, "--out")
    facts = merge(adapter, out)
    stdout_console().print(f"merged {adapter} (sha256 {facts['adapter_sha256'][:12]}) into {facts['base']} in "
                           f"{facts['merge_seconds']:.0f} s: {out}", soft_wrap=True)
    return 0
