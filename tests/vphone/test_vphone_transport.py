"""The virtual phone's transport, through the real adb server, adbutils, uiautomator2 and adb CLI."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import adbutils
import pytest
import uiautomator2

from virtual_phone import adb_server
from virtual_phone.u2server import EXPECTED_JAR_MD5

U2_JAR = "/data/local/tmp/u2.jar"


def _device(phone) -> adbutils.AdbDevice:
    return adbutils.AdbClient(host="127.0.0.1", port=phone.adb_port).device(phone.serial)


def _adb(phone, *args: str, input: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(adb_server.adb_command(phone.adb_port, "-s", phone.serial, *args),
                          input=input, capture_output=True, timeout=30)


def test_u2_connect_from_scratch_pushes_jar_and_launches_server(virtual_phone_factory):
    phone = virtual_phone_factory()
    assert not phone.fs.exists(U2_JAR)
    with pytest.raises(adbutils.AdbError):  # nothing serves tcp:9008 before the launch
        _device(phone).create_connection(adbutils.Network.TCP, 9008)

    d = uiautomator2.connect(phone.serial)

    jar = phone.fs.read(U2_JAR)
    assert hashlib.md5(jar).hexdigest() == EXPECTED_JAR_MD5
    assert phone.u2.running and phone.u2.launches == 1
    assert phone.world.u2_running
    assert d.info["sdkInt"] == 34
    # A second client finds the jar and the server in place and launches nothing.
    uiautomator2.connect(phone.serial).info
    assert phone.u2.launches == 1


def test_launch_without_jar_fails_like_app_process(virtual_phone_factory):
    phone = virtual_phone_factory()
    out = _device(phone).shell(
        "CLASSPATH=/data/local/tmp/u2.jar app_process / com.wetest.uia2.Main -p 9008", timeout=5)
    assert "Could not find class" in out
    assert not phone.u2.running


def test_shell_v1_and_v2_exit_codes(virtual_phone):
    d = _device(virtual_phone)
    assert d.shell("echo hello") == "hello"

    v1 = d.shell2("echo out; nosuchcmd")
    assert v1.returncode == 127
    assert "out" in v1.output and "nosuchcmd: inaccessible or not found" in v1.output

    v2 = d.shell2("nosuchcmd", v2=True)
    assert v2.returncode == 127
    assert v2.stdout == ""
    assert "nosuchcmd: inaccessible or not found" in v2.stderr

    ok = d.shell2("echo fine", v2=True)
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "fine\n", "")


def test_sync_push_stat_list_pull(virtual_phone, tmp_path: Path):
    d = _device(virtual_phone)
    payload = os.urandom(700_000)  # many 4 KiB DATA chunks and several WRTE packets each way
    d.sync.push(payload, "/sdcard/Download/blob.bin", mode=0o644, check=True)

    st = d.sync.stat("/sdcard/Download/blob.bin")
    assert (st.size, st.mode) == (len(payload), 0o100644)
    assert virtual_phone.fs.read("/sdcard/Download/blob.bin") == payload

    names = {f.path: f for f in d.sync.list("/sdcard/Download")}
    assert names["blob.bin"].size == len(payload)
    assert d.sync.read_bytes("/sdcard/Download/blob.bin") == payload
    d.sync.pull("/sdcard/Download/blob.bin", tmp_path / "blob.bin")
    assert (tmp_path / "blob.bin").read_bytes() == payload

    assert d.sync.stat("/sdcard/missing").mode == 0
    assert not d.sync.exists("/sdcard/missing")
    with pytest.raises(adbutils.AdbError, match="No such file"):
        d.sync.read_bytes("/sdcard/missing")


def test_adb_cli_lists_the_phone_with_its_banner(virtual_phone):
    out = subprocess.run(adb_server.adb_command(virtual_phone.adb_port, "devices", "-l"),
                         capture_output=True, text=True, timeout=30).stdout
    line = next(x for x in out.splitlines() if x.startswith(virtual_phone.serial))
    assert line.split()[1] == "device"
    assert "product:vphone" in line and "model:VirtualPhone" in line and "device:vphone" in line


def test_adb_cli_shell_push_pull(virtual_phone, tmp_path: Path):
    r = _adb(virtual_phone, "shell", "echo", "from-cli")
    assert (r.returncode, r.stdout) == (0, b"from-cli\n")

    r = _adb(virtual_phone, "shell", "nosuchcmd")
    assert r.returncode == 127  # the CLI speaks shell v2 and returns the device's exit code
    assert b"inaccessible or not found" in r.stderr

    local = tmp_path / "notes.txt"
    local.write_bytes(b"pushed by the adb CLI\n" * 1000)
    r = _adb(virtual_phone, "push", str(local), "/data/local/tmp/dir/notes.txt")
    assert r.returncode == 0, r.stderr
    assert virtual_phone.fs.read("/data/local/tmp/dir/notes.txt") == local.read_bytes()

    back = tmp_path / "back.txt"
    r = _adb(virtual_phone, "pull", "/data/local/tmp/dir/notes.txt", str(back))
    assert r.returncode == 0, r.stderr
    assert back.read_bytes() == local.read_bytes()


def test_tcp_stream_to_unserved_port_is_refused(u2_device, virtual_phone):
    d = _device(virtual_phone)
    with pytest.raises(adbutils.AdbError):
        d.create_connection(adbutils.Network.TCP, 9009)
    conn = d.create_connection(adbutils.Network.TCP, 9008)  # the running server accepts
    try:
        conn.sendall(b"GET /ping HTTP/1.1\r\nHost: x\r\n\r\n")
        reply = b""
        while chunk := conn.recv(4096):
            reply += chunk
    finally:
        conn.close()
    assert reply.startswith(b"HTTP/1.1 200") and reply.endswith(b"pong")


def test_rpc_errors_map_to_uiautomator2_exceptions(u2_device):
    with pytest.raises(uiautomator2.UiObjectNotFoundError):
        u2_device(text="No such element anywhere").info  # objInfo fails on the phone
    with pytest.raises(uiautomator2.RPCUnknownError):
        u2_device.jsonrpc.noSuchMethod()


def test_world_calls_do_not_block_other_streams(u2_device, virtual_phone):
    """A waitForExists that waits on the phone leaves shells and other RPCs answering."""
    import threading
    import time

    waiting = threading.Thread(target=lambda: u2_device(text="Never there").wait(timeout=1.5))
    waiting.start()
    time.sleep(0.2)
    t0 = time.monotonic()
    assert _device(virtual_phone).shell("echo meanwhile") == "meanwhile"
    u2_device.info
    elapsed = time.monotonic() - t0
    still_waiting = waiting.is_alive()
    waiting.join()
    assert still_waiting, "waitForExists returned early: the test proves nothing"
    assert elapsed < 1.0


def test_two_phones_at_once(virtual_phone_factory):
    a = virtual_phone_factory(seed=1)
    b = virtual_phone_factory(seed=2)
    assert a.serial != b.serial
    client = adbutils.AdbClient(host="127.0.0.1", port=a.adb_port)
    listed = {info.serial: info.state for info in client.list()}
    assert listed[a.serial] == listed[b.serial] == "device"
    _device(a).sync.push(b"only on a", "/sdcard/a.txt")
    assert a.fs.exists("/sdcard/a.txt") and not b.fs.exists("/sdcard/a.txt")
    b.stop()
    assert _device(a).shell("echo still here") == "still here"
    assert b.serial not in {info.serial for info in client.list()}


def _listening(proto: str) -> dict[int, str]:
    """socket inode -> local address of every listening socket in /proc/net/<proto>."""
    out: dict[int, str] = {}
    for name in (proto, proto + "6"):
        path = Path("/proc/net") / name
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            f = line.split()
            # TCP LISTEN is state 0A; a bound UDP socket (state 07) also receives from the network
            if (proto == "tcp" and f[3] == "0A") or (proto == "udp" and f[3] == "07"):
                out[int(f[9])] = f[1]
    return out


def _socket_inodes(pid: int | str) -> set[int]:
    inodes = set()
    fd_dir = Path(f"/proc/{pid}/fd")
    for fd in fd_dir.iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    return inodes


def _is_loopback(addr: str) -> bool:
    host = addr.split(":")[0]
    return host in ("0100007F", "00000000000000000000000001000000")


def test_nothing_listens_beyond_loopback(virtual_phone_factory):
    phone = virtual_phone_factory()
    uiautomator2.connect(phone.serial).info
    tcp, udp = _listening("tcp"), _listening("udp")
    # The adb server daemon: the process that owns the session server's listening socket.
    port_hex = f"{phone.adb_port:04X}"
    server_inodes = {i for i, a in tcp.items() if a.endswith(":" + port_hex)}
    assert server_inodes, "the session's adb server is not listening"
    pids = {"self"}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if _socket_inodes(proc.name) & server_inodes:
                    pids.add(proc.name)
            except OSError:
                continue
    assert len(pids) == 2, "could not find the adb server process"
    phone_port = f":{phone.port:04X}"
    seen_phone = False
    for pid in pids:
        mine = _socket_inodes(pid)
        for inode in mine & (set(tcp) | set(udp)):
            addr = tcp.get(inode) or udp[inode]
            seen_phone |= addr.endswith(phone_port)
            assert _is_loopback(addr), f"pid {pid} listens on {addr}"
    assert seen_phone


def test_adb_cli_shell_reading_stdin(virtual_phone):
    """`adb shell` without a command runs what stdin feeds it, exit status included."""
    r = _adb(virtual_phone, "shell", input=b"echo one\necho two\nexit 3\n")
    assert (r.returncode, r.stdout) == (3, b"one\ntwo\n")
    r = _adb(virtual_phone, "shell", "-T", input=b"echo raw\nnosuchcmd\n")
    assert r.returncode == 127 and r.stdout == b"raw\n"
    assert b"nosuchcmd: inaccessible or not found" in r.stderr
