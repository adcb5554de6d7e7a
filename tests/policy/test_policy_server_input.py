"""The policy server's input: an empty --host is refused, a malformed Content-Length answered 400/413."""

from __future__ import annotations

import socket

import pytest

from agent_host.cli import main
from agent_host.policy.script import PolicyScript
from agent_host.policy.server import PolicyServer


def test_empty_host_is_refused_not_all_interfaces(tmp_path, capsys):
    # before the fix this served forever on 0.0.0.0
    script = tmp_path / "s.yaml"
    script.write_text("- wait: {seconds: 1}\n")
    assert main(["policy", "serve", "--script", str(script), "--port", "0", "--host", ""]) != 0
    err = capsys.readouterr().err
    assert "--host is empty" in err and len(err.strip().splitlines()) == 1


def _raw_post(port: int, length: str) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                  + f"Content-Length: {length}\r\n\r\n".encode() + b"{}")
        s.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
        return data


@pytest.mark.parametrize("length, code", [("abc", 400), ("-5", 400), ("1.5", 400),
                                          ("99999999999999999999", 413), (str(10**9), 413)])
def test_malformed_content_length_is_answered(length, code, capsys):
    script = PolicyScript.from_data([{"wait": {"seconds": 1}}])
    with PolicyServer(script) as server:
        reply = _raw_post(server.port, length)
    assert reply.startswith(f"HTTP/1.1 {code}".encode()), reply[:200]
    assert b"Content-Length" in reply
    assert "Traceback" not in capsys.readouterr().err
