"""`adb reverse` and the `framebuffer:` service, through adbutils and the adb CLI."""

from __future__ import annotations

import io
import subprocess

import adbutils
import pytest
from PIL import Image, ImageChops

from virtual_phone import adb_server


def test_reverse_forward_list_remove(u2_device, virtual_phone, adb_server_port) -> None:
    dev = u2_device.adb_device
    dev.reverse_remove_all()
    dev.reverse("tcp:8080", "tcp:9000")
    dev.reverse("localabstract:vphone", "tcp:9001")
    assert [(r.remote, r.local) for r in dev.reverse_list()] == [("tcp:8080", "tcp:9000"),
                                                                  ("localabstract:vphone", "tcp:9001")]
    with pytest.raises(adbutils.AdbError, match="cannot rebind"):
        dev.reverse("tcp:8080", "tcp:9002", norebind=True)
    dev.reverse("tcp:8080", "tcp:9002")          # rebinding is allowed without norebind
    out = subprocess.run([adb_server.find_adb(), "-P", str(adb_server_port), "-s", virtual_phone.serial,
                          "reverse", "--list"], capture_output=True, text=True, timeout=20)
    assert out.returncode == 0 and "tcp:8080 tcp:9002" in out.stdout, out
    dev.reverse_remove("tcp:8080")
    assert [r.remote for r in dev.reverse_list()] == ["localabstract:vphone"]
    dev.reverse_remove_all()
    assert dev.reverse_list() == []


def test_framebuffer_is_the_screen(u2_device) -> None:
    dev = u2_device.adb_device
    u2_device.shell("am start -n com.android.settings/.Settings")
    img = dev.framebuffer()
    assert img.size == (1080, 2400) and img.mode == "RGBA"
    png = Image.open(io.BytesIO(dev.shell("screencap -p", encoding=None))).convert("RGB")
    assert ImageChops.difference(img.convert("RGB"), png).getbbox() is None
