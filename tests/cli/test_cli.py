import subprocess
import sys

import pytest

from agent_host.cli import VERBS, build_parser


def _help(parser, argv, capsys) -> str:
    # argparse prints the help and exits 0; not exiting at all is a failure too
    with pytest.raises(SystemExit) as exc:
        parser.parse_args(argv)
    assert exc.value.code == 0, argv
    return capsys.readouterr().out


def test_every_verb_registers_and_has_help(capsys):
    """README: every verb has examples in its own --help (verbs with sub-verbs: in each of those)."""
    parser = build_parser()
    assert len(VERBS) >= 13
    for verb in VERBS:
        text = _help(parser, [verb, "--help"], capsys)
        assert text.startswith(f"usage: agent-host {verb}"), verb
        subs = [a for a in parser._subparsers._group_actions[0].choices[verb]._actions
                if a.__class__.__name__ == "_SubParsersAction"]
        # an alias (`phone doctor` for `phone check`) shares its parser, whose usage names the verb
        names = list({id(sp): n for n, sp in reversed(list(subs[0].choices.items()))}.values())[::-1] if subs else []
        if not names:
            assert "examples:" in text and f"agent-host {verb}" in text.split("examples:", 1)[1], verb
        for name in names:
            sub = _help(parser, [verb, name, "--help"], capsys)
            canonical = subs[0].choices[name].prog.rsplit(" ", 1)[-1]   # an alias (`phone doctor`): its verb's
            assert sub.startswith(f"usage: agent-host {verb} {canonical}"), (verb, name)
            assert f"agent-host {verb} {name}" in sub.split("examples:", 1)[-1] and "examples:" in sub, (verb, name)


def test_user_error_is_one_line_and_nonzero(tmp_path):
    from agent_host.config.builds import HostProfile
    from agent_host.config.loading import load_model
    from agent_host.errors import ConfigError

    bad = tmp_path / "h.yaml"
    bad.write_text("id: x\ndescription: d\nhardware_class: c\nbuilds:\n  - id: b\n    server: nope\n    weight_path: bf16\n")
    try:
        load_model(bad, HostProfile)
    except ConfigError as exc:
        msg = str(exc)
    else:
        raise AssertionError("expected ConfigError")
    assert f"{bad}:6: builds[0].server:" in msg


def test_module_entry_point_prints_version():
    out = subprocess.run([sys.executable, "-m", "agent_host", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("agent-host ")


def _options_without_help(parser, path):
    import argparse
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options_without_help(sub, path + [name])
        elif not isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            if action.help is None or not str(action.help).strip():
                yield f"{' '.join(path)} {'/'.join(action.option_strings) or action.dest}"


def test_every_option_of_every_verb_has_help():
    """Issue 14: `demo --repeats` had no help text; every option and positional of every verb
    and sub-verb must say what it does (argparse.SUPPRESS, a deliberate hiding, is allowed)."""
    missing = list(_options_without_help(build_parser(), ["agent-host"]))
    assert not missing, "options without help: " + ", ".join(missing)
