"""`agent-host policy serve`: a scripted policy behind an OpenAI-compatible HTTP server."""

from __future__ import annotations

import argparse
from pathlib import Path
import os
import sys
from typing import TYPE_CHECKING

from agent_host.errors import UserError

if TYPE_CHECKING:
    from agent_host.policy.script import PolicyScript
    from agent_host.policy.suite import SuitePolicy

EPILOG = """\
SCRIPT is one of (told apart by its shape; docs/policies.md, "Scripted policies", has a
worked example of each):
  a list of tool calls        - open_app: {name: settings}
                              - tap: {text: "Network & internet"}   (elements by selector)
                              - task_complete: {reason: "done"}
  a mapping with actions:     the list, plus after, wait_seconds, retries, retry_wait
  a mapping with suite:       task files, directories or ids: plays each task's solution,
                              picked by the goal; flaws: seeded mistakes per episode
Items besides the tools: say: "text" (a reply without a tool call), raw: {name, arguments}
(a tool call sent as is). A task file is not a script: `agent-host tasks check-solutions`
plays the solutions in task files.

examples:
  agent-host policy serve --script wifi.yaml --port 0
  agent-host episode --task wifi-on --phone 127.0.0.1:5555 --base-url http://127.0.0.1:PORT/v1 --model policy
  agent-host policy serve --script suite.yaml --port 8009 --log requests.jsonl
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("policy", help="scripted policies behind an OpenAI-compatible server",
                       description="Scripted policies (for tests, task authoring and scripted builds); "
                                   "see docs/policies.md.")
    psub = p.add_subparsers(dest="policy_cmd", metavar="<command>")
    s = psub.add_parser("serve", help="serve a policy script over HTTP (OpenAI chat completions)",
                        description="Serve a scripted policy on an OpenAI-compatible HTTP port; "
                                    "the guide is docs/policies.md.",
                        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("--script", required=True,
                   help="a YAML file holding a list of tool calls, a mapping with `actions:` (the list "
                        "plus options), or a mapping with `suite:` (task solutions, optional flaws); "
                        "a task file is not a script (its solution runs with tasks check-solutions)")
    s.add_argument("--port", type=int, default=8009, help="port (0: pick a free one; default 8009)")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    s.add_argument("--api-key", default=None, help="require this bearer token (default: the environment "
                   "variable AGENT_HOST_POLICY_API_KEY, which keeps it out of the process list)")
    s.add_argument("--model", default="policy", help="the served model name (default policy)")
    s.add_argument("--delay-ms", type=int, default=0, help="answer each request this much later")
    s.add_argument("--log", default=None, help="append each request and response to this JSONL file")
    s.set_defaults(func=_serve)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def _serve(args: argparse.Namespace) -> int:
    from agent_host.policy.server import PolicyServer
    from agent_host.policy.suite import load_policy

    script = load_policy(args.script)
    if not args.host.strip():
        # an empty host binds every interface (0.0.0.0): never by accident
        raise UserError("--host is empty: it would listen on every interface; name an address "
                        "(127.0.0.1 by default, 0.0.0.0 to mean every interface)")
    if not 0 <= args.port <= 65535:
        raise UserError(f"--port: {args.port} is not a TCP port")
    if args.api_key is not None and not args.api_key.strip():
        raise UserError("--api-key is empty: an empty key would turn authentication off; "
                        "leave the flag out to serve without one")
    if args.log is not None:
        log = Path(args.log)
        if not str(args.log).strip() or log.is_dir():
            raise UserError(f"--log {args.log!r}: name a file to append the requests to, not a directory")
        if log.exists() and not log.is_file():
            raise UserError(f"--log {args.log}: not a regular file")
        try:
            with log.open("a", encoding="utf-8"):
                pass
        except OSError as exc:
            raise UserError(f"--log {args.log}: cannot append to it ({exc.strerror or exc})") from None
    api_key = args.api_key or os.environ.get("AGENT_HOST_POLICY_API_KEY") or None
    server = PolicyServer(script, host=args.host, port=args.port, api_key=api_key,
                          model=args.model, delay_ms=max(0, args.delay_ms), log_path=args.log)
    try:
        server.start()
    except OSError as exc:
        print(f"error: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(f"policy server: {server.base_url} port={server.port} model={server.model} "
          f"script={args.script} ({_describe(script)})", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


def _describe(script: PolicyScript | SuitePolicy) -> str:
    from agent_host.policy.suite import SuitePolicy

    if isinstance(script, SuitePolicy):
        flaws = ", ".join(f"{k}={v:g}" for k, v in script.flaws.items()) or "none"
        return f"suite of {len(script.solutions)} tasks, flaws: {flaws}"
    return f"{len(script.items)} actions, after: {script.after}"
