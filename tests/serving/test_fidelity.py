"""The fidelity probe: pure comparison, prompts, orchestration with fakes, and one real run."""

from __future__ import annotations

import contextlib
import json

import pytest

from agent_host.errors import UserError
from agent_host.serving import fidelity
from agent_host.serving.endpoint import Endpoint
from agent_host.serving.fidelity import (
    UNIT_TOKENS, UNIT_WORDS, compare, first_divergence, load_prompts, messages, whitespace_tokens,
)


def test_first_divergence():
    assert first_divergence([1, 2, 3], [1, 2, 3]) is None
    assert first_divergence([1, 2, 3], [1, 9, 3]) == 1
    assert first_divergence([5], [6]) == 0
    assert first_divergence([1, 2], [1, 2, 3]) == 2
    assert first_divergence([], [1]) == 0
    assert first_divergence([], []) is None


def test_whitespace_tokens_keep_whitespace_differences():
    assert whitespace_tokens("tap(3) now") == ["tap(3)", " now"]
    assert whitespace_tokens("a  b") != whitespace_tokens("a b")
    assert whitespace_tokens("a ") == ["a", " "]


def test_compare_with_tokens():
    ids = ["p1", "p2", "p3", "p4"]
    ref = ["tap(3)", "swipe(up)", "press(back)", "open_app(clock)"]
    got = ["tap(3)", "swipe(down)", "press(back) x", "open_app(clock)"]
    rt = [[1, 2], [3, 4, 5], [6], [7, 8]]
    gt = [[1, 2], [3, 9, 5], [6, 10], [7, 8]]
    r = compare("b", "w4a8-amx", ids, ref, got, ref_tokens=rt, tokens=gt, finish=["stop"] * 4)
    assert r.unit == UNIT_TOKENS
    assert (r.exact, r.total) == (2, 4)
    assert [x.divergence for x in r.results] == [None, 1, 1, None]
    assert r.median_divergence == 1
    assert r.to_json()["prompts"][1]["answer"] == "swipe(down)"
    assert r.to_json()["prompts"][1]["reference"] == "swipe(up)"


def test_compare_without_tokens_uses_whitespace_words():
    r = compare("b", "x", ["a", "b", "c"], ["one two three", "x y", "same"],
                ["one two four", "x", "same"])
    assert r.unit == UNIT_WORDS
    assert [x.divergence for x in r.results] == [2, 1, None]
    assert r.median_divergence == 1.5 and r.exact == 1


def test_compare_all_exact_has_no_median_and_lossy_tokens_still_diverge():
    r = compare("b", "x", ["a"], ["t"], ["t"], ref_tokens=[[1]], tokens=[[1]])
    assert r.exact == 1 and r.median_divergence is None
    r = compare("b", "x", ["a"], ["t "], ["t"], ref_tokens=[[1]], tokens=[[1]])
    assert r.exact == 0 and r.results[0].divergence == 1


def test_compare_rejects_mismatched_lengths():
    with pytest.raises(ValueError):
        compare("b", "x", ["a", "b"], ["t"], ["t"])


def test_default_prompts():
    ps = load_prompts()
    assert len(ps.prompts) == 12 and len({p.id for p in ps.prompts}) == 12
    for p in ps.prompts:
        assert p.screen.startswith("app: ") and "[0] " in p.screen and p.goal
        m = messages(ps, p)
        assert [x["role"] for x in m] == ["system", "user"]
        assert p.goal in m[1]["content"] and "next action" in m[1]["content"]
    assert "task_complete" in ps.system


def test_bad_prompts_file_names_file_line_field(tmp_path):
    bad = tmp_path / "p.yaml"
    bad.write_text("system: s\nprompts:\n  - id: a\n    goal: g\n")
    with pytest.raises(UserError, match=rf"{bad}:3: prompts\[0\].screen: Field required"):
        load_prompts(bad)
    bad.write_text("system: s\nprompts:\n  - {id: a, goal: g, screen: s}\n  - {id: a, goal: g, screen: s}\n")
    with pytest.raises(UserError, match="id 'a' appears twice"):
        load_prompts(bad)


# ----------------------------------------------------------------- orchestration (fakes)

def test_run_fidelity_orchestration(monkeypatch, tmp_path):
    """Reference first, builds one at a time, a failing build reported and not fatal."""
    from agent_host.config.builds import Build

    started, live = [], []

    class Srv:
        def __init__(self, b):
            self.endpoint = Endpoint("http://x/v1", "k", b.id, b.id)

    @contextlib.contextmanager
    def served(b, **kw):
        if b.id == "broken":
            raise UserError("build broken: server not ready: it exited\nlog line")
        assert not live, "two servers up at once"
        started.append(b.id)
        live.append(b.id)
        try:
            yield Srv(b)
        finally:
            live.pop()

    def complete(ep, msgs, *, max_tokens, seed, tools=None, tool_choice=None, timeout=None):
        assert ep.model in live and max_tokens == 7 and seed == 3
        return fidelity.Answer("same answer" if ep.model != "drifty" or "Wi-Fi" not in msgs[1]["content"]
                               else "other answer"), "stop"

    monkeypatch.setattr(fidelity, "_served", served)
    monkeypatch.setattr(fidelity, "complete", complete)
    monkeypatch.setattr(fidelity, "tokenizer", lambda ep: (lambda t: [ord(c) for c in t]) if ep.model == "drifty" else None)
    mk = lambda i: Build(id=i, weight_path="w-" + i, server="vllm", model="m")  # noqa: E731
    rep = fidelity.run_fidelity([mk("same"), mk("drifty"), mk("broken")], mk("ref"), max_tokens=7, seed=3,
                                log_dir=tmp_path)
    assert started == ["ref", "same", "drifty"]
    same, drifty, broken = rep.builds
    assert (same.exact, same.total, same.unit) == (12, 12, UNIT_WORDS)
    n_wifi = sum("Wi-Fi" in p.goal or "Wi-Fi" in p.screen for p in load_prompts().prompts)
    assert drifty.unit == UNIT_TOKENS and drifty.exact == 12 - n_wifi and drifty.median_divergence == 0
    assert broken.error == "build broken: server not ready: it exited" and broken.total == 0
    data = rep.to_json()
    assert data["reference"] == "ref" and len(data["reference_answers"]) == 12
    assert data["reference_deterministic"] is True


def test_run_fidelity_with_real_policy_servers(tmp_path, monkeypatch):
    """The same orchestration with nothing faked: each build a real managed policy server
    (started, asked over HTTP, stopped), one that cannot start reported and not fatal."""
    from agent_host.config.builds import Build
    from agent_host.serving import procs

    monkeypatch.setenv("AGENT_HOST_CACHE", str(tmp_path / "cache"))   # our pidfiles only

    def build(bid: str, answer: str | None) -> Build:
        script = tmp_path / f"{bid}.yaml"
        if answer is not None:
            script.write_text(json.dumps({"actions": [{"say": answer}]}))
        return Build(id=bid, weight_path="w-" + bid, server="policy", script=str(script))

    events: list[str] = []
    rep = fidelity.run_fidelity([build("same", "tap(3) now"), build("drifty", "tap(4) now"), build("broken", None)],
                                build("ref", "tap(3) now"), max_tokens=7, seed=3, log_dir=tmp_path / "logs",
                                startup_timeout=60, hook=events.append)
    assert [e for e in events if e.startswith("starting")] == [
        "starting reference ref", "starting same", "starting drifty", "starting broken"]
    assert sum(e.startswith("same: prompt ") for e in events) == 12
    same, drifty, broken = rep.builds
    assert (same.build, same.exact, same.total, same.unit) == ("same", 12, 12, UNIT_WORDS)  # no /tokenize
    assert (drifty.exact, drifty.total, drifty.median_divergence) == (0, 12, 0)
    assert broken.total == 0 and broken.error.startswith("build broken: server not ready")
    assert rep.reference_answers == ["tap(3) now"] * 12
    assert not list(procs.pidfile_dir().glob("*.json"))          # every server stopped


def test_not_runnable_build_is_refused(tmp_path):
    from agent_host.config.hosts import load_host_profile

    npu = load_host_profile("phone-npu").builds[0]
    with pytest.raises(UserError, match="not runnable"):
        with fidelity._served(npu, log_dir=tmp_path, seed=0, startup_timeout=None):
            pass


# ----------------------------------------------------------------- real vLLM, tiny model

def test_print_report(capsys):
    from agent_host.cli.fidelity import print_report
    from agent_host.serving.fidelity import BuildResult, FidelityReport

    ok = compare("w4a8-amx", "w4a8-amx", ["a", "b", "c"], ["x y", "p q", "s"], ["x z", "p q", "t"])
    bad = BuildResult("w4a16-wna16", "w4a16-wna16", UNIT_WORDS, error="build w4a16-wna16: server not ready")
    print_report(FidelityReport("bf16", ["a", "b", "c"], 64, 0, [ok, bad], ["x y", "p q", "s"]))
    out = capsys.readouterr().out
    assert "fidelity vs bf16: 3 greedy prompts" in out
    assert "1/3" in out and "0.5" in out and "whitespace words" in out
    assert "w4a16-wna16: build w4a16-wna16: server not ready" in out
    assert "w4a8-amx: the server has no /tokenize" in out


@pytest.mark.vllm
@pytest.mark.slow
def test_fidelity_cli_on_tiny_random(tiny_vllm, tmp_path, capsys, monkeypatch):
    """Against the shared tiny vLLM server (as an `openai` build): itself -> 12/12 exact in
    server tokens; the same model served with a different chat template (one more server,
    started and stopped by the probe) -> divergences reported."""
    import yaml

    from agent_host.agent.tools import TOOL_NAMES
    from agent_host.cli import main
    from agent_host.serving.spec import resolve_chat_template
    from agent_host.serving.models import tiny_random_build

    ep = tiny_vllm.endpoint
    monkeypatch.setenv("TINY_VLLM_KEY", ep.api_key)
    remote = {"id": "tiny-remote", "weight_path": "fp32", "server": "openai", "base_url": ep.base_url,
              "model": ep.model, "api_key_env": "TINY_VLLM_KEY"}
    base = tiny_random_build()
    template = open(resolve_chat_template(base.chat_template)).read()
    variant = base.model_copy(update={"id": "tiny-random-tpl", "chat_template": "Be brief.\n" + template})
    profile = {"id": "tiny", "description": "test", "hardware_class": "x86-avx2",
               "builds": [remote, variant.model_dump(mode="json", exclude_defaults=True)]}
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(profile, sort_keys=False))
    out = tmp_path / "out"
    # with the agent's tools: the shared server against itself, tool calls in every answer
    rc = main(["fidelity", "--builds", "tiny-remote", "--reference", "tiny-remote", "--host-profile",
               str(path), "--max-tokens", "48", "--out", str(tmp_path / "tools"), "--json"])
    assert rc == 0
    with_tools = json.loads(capsys.readouterr().out)
    assert with_tools["tools"] is True and with_tools["reference_deterministic"] is True
    (self_,) = with_tools["builds"]
    assert (self_["exact"], self_["calls_exact"], self_["total"]) == (12, 12, 12)
    assert sum(p["answer"].split(" ", 1)[0] in TOOL_NAMES for p in self_["prompts"]) >= 6
    # plain text: a different chat template diverges
    rc = main(["fidelity", "--builds", "tiny-remote,tiny-random-tpl", "--reference", "tiny-remote",
               "--host-profile", str(path), "--max-tokens", "24", "--out", str(out), "--json",
               "--tools", "none"])
    assert rc == 0
    data = json.loads(capsys.readouterr().out)
    assert data == json.loads((out / "fidelity.json").read_text())
    same, tpl = data["builds"]
    assert (same["exact"], same["total"], same["unit"], same["median_divergence"]) == (12, 12, "tokens", None)
    assert all(p["length"] > 0 for p in same["prompts"])
    assert tpl["unit"] == "tokens" and tpl["exact"] < 12 and tpl["median_divergence"] is not None
    assert (out / "servers" / "tiny-random-tpl.server.log").is_file()
    assert tiny_vllm.alive()  # the shared server was only used, not stopped
    from agent_host.serving.fidelity import FidelityReport, BuildResult, PromptResult
    from agent_host.cli.fidelity import print_report

    rep = FidelityReport(data["reference"], data["prompts"], 24, 0,
                         [BuildResult(b["build"], b["weight_path"], b["unit"],
                                      [PromptResult(**p) for p in b["prompts"]]) for b in data["builds"]],
                         [])
    print_report(rep)
    table = capsys.readouterr().out
    print(table)  # shown with -s: the real table
    assert "12/12" in table and f"{tpl['exact']}/12" in table
