"""`agent-host fidelity`: do the builds answer what the reference build answers (tool calls and content)?"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path
from typing import TYPE_CHECKING

from agent_host.errors import UserError, check_dir_usable

if TYPE_CHECKING:
    from agent_host.config.observation import ObservationSpec
    from agent_host.serving.fidelity import PromptSet

EPILOG = """\
Sends N agent-style prompts (a phone screen and a goal, asking for the next action; 12 ship
with agent-host, or --prompts FILE) greedily to the reference and to every build, with the
agent's own tools and tool_choice "required" (--tools none: plain text), serving one build
at a time. An answer is the tool calls (name and canonical JSON arguments, in order) and the
content; an exact match means both are identical. Per build it reports the exact matches,
the tool-call matches, and the median position of the first divergence over the serialized
answer (content, then one line `name {json}` per call) among those that differ, and per
prompt both answers. Tokens come from the build server's /tokenize; without one (some
`openai` endpoints, policy servers) it compares whitespace words and says so (`unit`).

The reference answers every prompt twice: if it disagrees with itself, serving is not
deterministic and the report says so (exact counts then mean little).

Build ids are resolved as for `agent-host run`: ID, PROFILE/ID, or ID in --host-profile; an id
several profiles define means this machine's profile (`agent-host probe`). Put the reference
in --builds too to check that serving it is deterministic.

examples:
  agent-host fidelity --builds w4a8-amx,w4a16-tinygemm,w4a16-wna16 --reference bf16
  agent-host fidelity --builds tiny-random --reference tiny-random --max-tokens 32
  agent-host fidelity --builds my-endpoint --reference bf16 --prompts my-prompts.yaml --json
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fidelity", help="compare builds' greedy completions with a reference build",
                       description=__doc__, epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--builds", required=True, help="comma-separated build ids to compare")
    p.add_argument("--reference", default="bf16", help="the reference build (default bf16)")
    p.add_argument("--host-profile", metavar="P", help="host profile id or YAML file for the ids")
    p.add_argument("--prompts", type=Path, help="prompts YAML (default: the 12 shipped prompts)")
    p.add_argument("--tools", choices=["agent", "none"], default="agent",
                   help="offer the agent's tools with tool_choice required (default), or none: plain text")
    p.add_argument("--max-tokens", type=int, default=128, help="tokens per completion (default 128)")
    p.add_argument("--seed", type=int, default=0, help="server and request seed (default 0)")
    p.add_argument("--startup-timeout", type=float, help="seconds per server start "
                   "(default: each build's startup_timeout_s)")
    p.add_argument("--out", type=Path, help="directory for fidelity.json and server logs "
                   "(default reports/fidelity/<UTC time>)")
    p.add_argument("--request-timeout", type=float, default=600.0, metavar="S",
                   help="seconds one completion may take in total (default 600)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from agent_host.config.hosts import find_build
    from agent_host.serving.fidelity import load_prompts, run_fidelity

    ids = [b.strip() for b in args.builds.split(",") if b.strip()]
    if not ids:
        raise UserError("--builds: name at least one build")
    if args.max_tokens < 1:
        raise UserError("--max-tokens must be at least 1")
    if args.startup_timeout is not None and not args.startup_timeout > 0:
        raise UserError("--startup-timeout must be more than 0 seconds")
    if not 0 < args.request_timeout <= 86400:
        raise UserError("--request-timeout must be more than 0 and at most 86400 seconds")
    prompts = load_prompts(args.prompts)
    reference = find_build(args.reference, args.host_profile)
    spec = reference.observation_spec()
    # a reference that sees the screen is asked about screens it can see (unless --prompts)
    requests = screenshot_prompts(prompts, spec) if spec.images and args.prompts is None else None
    builds = [find_build(b, args.host_profile) for b in ids]
    for b in [reference, *builds]:
        if not b.runnable:
            raise UserError(f"build {b.id} is listed but not runnable: {' '.join(b.notes.split())}")
    out = args.out or Path("reports/fidelity") / dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    check_dir_usable(out, "--out")
    out.mkdir(parents=True, exist_ok=True)

    from rich.console import Console

    from agent_host.cli.steps import status_progress

    tools, choice = (agent_tools(), "required") if args.tools == "agent" else (None, None)
    err = Console(stderr=True, highlight=False)
    with status_progress("fidelity", err) as status:
        report = run_fidelity(builds, reference, prompts=prompts, max_tokens=args.max_tokens,
                              tools=tools, tool_choice=choice,
                              seed=args.seed, log_dir=out / "servers", startup_timeout=args.startup_timeout,
                              hook=lambda s: status.update(s), request_timeout=args.request_timeout,
                              requests=requests)
    data = report.to_json()
    (out / "fidelity.json").write_text(json.dumps(data, indent=2, ensure_ascii=False))
    if args.json:
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        print_report(report, out)
    return 1 if any(b.error for b in report.builds) else 0


# The screens a vision reference is probed on: (id, goal, shell commands from a fresh virtual
# phone). Drawn by the virtual phone each time (the status bar's clock moves), the same for every
# build of one probe.
SCREENS: tuple[tuple[str, str, list[str]], ...] = (
    ("shot-launcher", "Open the Calendar app.", []),
    ("shot-settings", "Turn on Wi-Fi.", ["monkey -p com.android.settings 1"]),
    ("shot-clock", "Set an alarm for 7:30 AM.", ["monkey -p com.google.android.deskclock 1"]),
    ("shot-messages", 'Text Ada Lovelace "On my way".', ["monkey -p com.google.android.apps.messaging 1"]),
)


def screenshot_prompts(ps: PromptSet, spec: ObservationSpec) -> list[tuple[str, list[dict]]]:
    """The probe's prompts for a build that sees the screen: each of SCREENS drawn by an
    in-process virtual phone and shown as `spec` shows it (shrunk, marked in `som` mode), the
    text part as the shipped prompts word it."""
    import io

    from PIL import Image

    from agent_host.agent import vision
    from agent_host.config.requests import png_data_url
    from agent_host.phone.parse import parse
    from agent_host.phone.render import render
    from agent_host.serving.fidelity import Prompt, messages
    from virtual_phone.fs import VirtualFS
    from virtual_phone.world import World

    out = []
    for pid, goal, commands in SCREENS:
        w = World(VirtualFS())
        for c in commands:
            w.shell(c)
        screen = parse(w.dump())
        img = vision.shown_image(Image.open(io.BytesIO(w.screenshot_png())), screen, spec)
        _, png = vision.encode(img)
        msgs = messages(ps, Prompt(id=pid, goal=goal, screen=vision.observation_text(spec, render(screen), img.size)))
        msgs[-1] = {"role": "user", "content": vision.content(msgs[-1]["content"], png_data_url(png))}
        out.append((pid, msgs))
    return out


def agent_tools() -> list[dict]:
    """The tools the agent offers on the virtual phone (open_app's names from its profile)."""
    from agent_host.agent.tools import tool_schemas
    from agent_host.config.phones import load_phone_profile

    return tool_schemas(sorted(load_phone_profile("virtual").apps))


def _short(text: str, width: int = 70) -> str:
    one = " | ".join(text.splitlines()) or "(empty)"
    return one if len(one) <= width else one[: width - 1] + "…"


def print_report(report, out: Path | None = None, *, per_prompt: bool = True) -> None:
    from rich.table import Table

    from agent_host.cli.output import stdout_console

    con = stdout_console(highlight=False)
    how = "with the agent's tools" if report.tools else "plain text"
    t = Table(title=f"fidelity vs {report.reference}: {len(report.prompts)} greedy prompts {how}, "
                    f"up to {report.max_tokens} tokens", title_justify="left")
    num = ("exact match", "same tool calls", "median first divergence", "time")
    for col in ("build", "weight path", *num[:3], "unit", "time"):
        t.add_column(col, justify="right" if col in num else "left")
    for b in report.builds:
        if b.error:
            t.add_row(b.build, b.weight_path, "-", "-", "-", "-", f"{b.seconds:.0f} s", style="red")
            continue
        med = b.median_divergence
        t.add_row(b.build, b.weight_path, f"{b.exact}/{b.total}", f"{b.calls_exact}/{b.total}",
                  "-" if med is None else f"{med:g}", b.unit, f"{b.seconds:.0f} s")
    con.print(t)
    if not report.reference_deterministic:
        con.print(f"[bold red]the reference {report.reference} is not deterministic:[/] asked twice, it "
                  f"answered {len(report.reference_unstable)}/{len(report.prompts)} prompts differently "
                  f"({', '.join(report.reference_unstable)}); exact-match counts mean little")
    else:
        con.print(f"the reference {report.reference} answered every prompt identically when asked twice")
    for b in report.builds if per_prompt else []:
        if b.error or not b.results:
            continue
        pt = Table(title=f"{b.build} vs {report.reference}, per prompt", title_justify="left")
        for col in ("prompt", "match", "divergence", report.reference, b.build):
            pt.add_column(col, overflow="fold")
        for r in b.results:
            match = "exact" if r.exact else ("same calls" if r.calls_match else "differs")
            pt.add_row(r.prompt, match, "-" if r.divergence is None else str(r.divergence),
                       _short(r.reference), _short(r.answer))
        con.print(pt)
    for b in report.builds:
        if b.error:
            con.print(f"[red]{b.build}: {b.error}[/red]")
        elif b.unit != "tokens":
            con.print(f"{b.build}: the server has no /tokenize; positions are whitespace-separated words")
    if out is not None:
        con.print(f"details: {out / 'fidelity.json'}")
