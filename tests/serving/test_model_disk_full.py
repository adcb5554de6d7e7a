"""A model build that runs out of disk is a one-line error naming the model and the cache, and
leaves nothing behind (seen: `make demo` on a full disk printed safetensors' Rust traceback)."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys

import pytest

from fixtures_cli import ROOT


def _small_disk_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
                           capture_output=True)
    return probe.returncode == 0


pytestmark = pytest.mark.skipif(not _small_disk_works(),
                                reason="needs `unshare -m` and a tmpfs mount (root, or a user namespace)")


def test_a_model_build_on_a_full_disk_is_one_line_and_leaves_nothing(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    # a 200 KB disk: room for the config and tokenizer, not for the tiny model's ~800 KB weights
    cli = shlex.join([sys.executable, "-m", "agent_host", "serve", "tiny-random"])
    script = (f"mount -t tmpfs -o size=200k tmpfs {shlex.quote(str(cache))} && "
              f"AGENT_HOST_CACHE={shlex.quote(str(cache))} PYTHONPATH={shlex.quote(str(ROOT))} {cli}; "
              f"rc=$?; echo \"left: $(ls -A {shlex.quote(str(cache))}/models)\" >&2; exit $rc")
    out = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True,
                         timeout=300, cwd=tmp_path)
    assert out.returncode not in (0, None), out
    *said, left = out.stderr.splitlines()
    assert "Traceback" not in out.stderr, out.stderr
    errors = [line for line in said if line.startswith("error: ")]
    assert len(errors) == 1 and said[-1] == errors[0], out.stderr     # progress lines, then one error
    assert "model tiny-random" in errors[0] and str(cache / "models") in errors[0], errors[0]
    assert "No space left on device" in errors[0] and "AGENT_HOST_CACHE" in errors[0], errors[0]
    # the lock file stays (builders wait on it); no half-built model or temporary directory
    assert all(name.endswith(".lock") for name in left.removeprefix("left:").split()), left
