"""`agent-host builds`: list the builds of the host profiles (device_profiles/hosts/*.yaml)."""

from __future__ import annotations

import argparse
import json

EPILOG = """\
Each host profile (x86-amx, x86-avx512, x86-avx2, arm64, cuda, jetson, phone-npu) lists the
builds that run on that class of machine; `agent-host probe` says which class this one is.
A build's model is a local path or a name you map to one: the environment variable
AGENT_HOST_MODEL_<NAME> or ~/.config/agent-host/models.yaml (see docs/builds.md).

examples:
  agent-host builds                           every profile
  agent-host builds --host-profile x86-amx
  agent-host builds --host-profile my-host.yaml --json
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("builds", help="list the builds of the host profiles",
                       description=__doc__, epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host-profile", metavar="P", help="a host profile id or YAML file (default: all)")
    p.add_argument("--json", action="store_true", help="print the profiles and builds as JSON")
    p.set_defaults(func=_run)


def _model(build) -> str:
    from agent_host.config.builds import model_location
    from agent_host.serving import models

    if build.model in models.KNOWN:
        return f"{build.model} (made by agent-host)"
    path, where = model_location(build)
    return where if build.model else "-"


def _run(args: argparse.Namespace) -> int:
    from agent_host.config.hosts import all_host_profiles, load_host_profile

    profiles = [load_host_profile(args.host_profile)] if args.host_profile is not None else all_host_profiles()
    if args.json:
        out = []
        for prof in profiles:
            d = prof.model_dump(mode="json", exclude={"builds"})
            d["builds"] = [dict(b.model_dump(mode="json"), model_location=_model(b)) for b in prof.builds]
            out.append(d)
        print(json.dumps(out, indent=2))
        return 0


    from rich.table import Table

    from agent_host.cli.output import stdout_console
    from agent_host.serving.kinds import KINDS


    con = stdout_console(highlight=False)
    models: dict[str, str] = {}
    for prof in profiles:
        t = Table(title=f"{prof.id}: {prof.description}", title_justify="left", expand=False)
        for col in ("id", "weight path", "server", "bits/w", "kernel", "verified", "runnable",
                    "decode tok/s", "role"):
            t.add_column(col, justify="right" if col in ("bits/w", "decode tok/s") else "left",
                         no_wrap=col in ("id", "weight path", "verified", "runnable", "role"))
        rec: dict[str, list[str]] = {}
        for prio, r in prof.recommend.items():
            rec.setdefault(r.build, []).append(f"{prio} pick")
        for b in prof.builds:
            t.add_row(b.id, b.weight_path, b.server,
                      f"{b.bits_per_weight:g}" if b.bits_per_weight else "-",
                      b.kernel or "-", "yes" if b.verified else "no", "yes" if b.runnable else "no",
                      b.measured.summary() if b.measured else "-",
                      ", ".join([b.role] + rec.get(b.id, [])))
            if b.model and KINDS[b.server].LOCAL_MODEL and b.runnable:
                models.setdefault(b.model, _model(b))
        con.print(t)
        con.print()
    from agent_host.config.hosts import embedded_builds

    ref = next((b for b in embedded_builds().values() if b.role == "reference"), None)
    if ref is not None and any(ref.id in {b.id for b in p.builds} for p in profiles):
        con.print(f"[bold]embedded reference:[/bold] {ref.id} ({ref.weight_path}): {' '.join(ref.notes.split())}")
        con.print()
    if models:
        con.print("[bold]models[/bold] (names you map to local paths: docs/builds.md)")
        for name, where in sorted(models.items()):
            con.print(f"  {where}" if where.startswith(name) else f"  {name}: {where}")
    return 0
