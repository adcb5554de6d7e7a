import subprocess
import sys

from agent_host.cli import VERBS, build_parser


def test_every_verb_registers_and_has_help():
    parser = build_parser()
    for verb in VERBS:
        # argparse exits 0 after printing help
        try:
            parser.parse_args([verb, "--help"])
        except SystemExit as exc:
            assert exc.code == 0, verb


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
