"""The admin server's connection handling on a running reactor: a client that does not
read its replies must neither stall the reactor (which forwards the switch's packets)
nor lose replies it reads later; one that lets too many pile up is dropped."""

from __future__ import annotations

import json
import select
import socket
import threading
import time
import uuid
from collections.abc import Iterator

import pytest

from emu.core.clock import RealClock
from emu.runtime.admin import MAX_PENDING, AdminClient, AdminServer

BIG = 10_000  # characters in one "big" reply
SLOW_S = 0.5  # how long a "slow" request holds the reactor


@pytest.fixture
def server() -> Iterator[str]:
    clock = RealClock()
    path = f"/tmp/emu-admin-{uuid.uuid4().hex[:8]}.sock"
    srv = AdminServer(path, clock, {"ping": lambda req: "pong",
                                    "big": lambda req: "x" * BIG,
                                    "slow": lambda req: time.sleep(SLOW_S) or "slow"})
    loop = threading.Thread(target=clock.run, daemon=True)
    loop.start()
    try:
        yield path
    finally:
        clock.stop()
        loop.join(5)
        srv.close()
        clock.close()


def _connect(path: str) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(path)
    return s


def _replies(s: socket.socket, n: int) -> list[dict[str, object]]:
    """Read up to n reply lines (fewer if the server closes the connection, which may
    cut the last line short: only whole lines count)."""
    buf = b""
    while buf.count(b"\n") < n:
        data = s.recv(1 << 16)
        if not data:
            break
        buf += data
    return [json.loads(ln) for ln in buf.split(b"\n")[:buf.count(b"\n")]]


def _ask_many(s: socket.socket, n: int) -> None:
    s.sendall(b"".join(json.dumps({"id": i, "cmd": "big"}).encode() + b"\n"
                       for i in range(n)))


def test_a_client_that_does_not_read_stalls_nobody_and_loses_nothing(server: str) -> None:
    n = 60  # 600 kB of replies: more than the socket takes, less than MAX_PENDING
    assert n * BIG < MAX_PENDING
    slow = _connect(server)
    _ask_many(slow, n)
    other = _connect(server)
    other.settimeout(1.0)  # the reactor once blocked 2 s writing to `slow`
    other.sendall(b'{"id": "o", "cmd": "ping"}\n')
    assert _replies(other, 1) == [{"id": "o", "ok": True, "result": "pong"}]
    got = _replies(slow, n)
    assert [r["id"] for r in got] == list(range(n))
    assert all(r["ok"] and r["result"] == "x" * BIG for r in got)
    slow.close()
    other.close()


def _dropped(s: socket.socket, timeout_s: float = 10.0) -> bool:
    """Wait, reading nothing, until the server closes the connection."""
    p = select.poll()
    p.register(s, select.POLLRDHUP)
    return bool(p.poll(timeout_s * 1000))


def test_a_client_leaving_too_many_replies_unread_is_dropped(server: str) -> None:
    n = 3 * MAX_PENDING // BIG
    slow = _connect(server)
    _ask_many(slow, n)
    # Not a read before the server gives up: reading while it still answers would drain
    # its buffer, and whether it ever held more than MAX_PENDING would be a matter of speed.
    assert _dropped(slow)
    got = _replies(slow, n)  # what was sent before the server gave up, then EOF
    assert 0 < len(got) < n
    assert [r["id"] for r in got] == list(range(len(got)))
    # the server itself goes on
    again = _connect(server)
    again.sendall(b'{"id": 1, "cmd": "ping"}\n')
    assert _replies(again, 1)[0]["result"] == "pong"
    again.close()


def test_a_call_cut_short_does_not_hand_its_reply_to_the_next(server: str) -> None:
    """A call cut short (its timeout here; Ctrl-C in a run) left its reply on the
    connection, and the next call returned that reply as its own: the run's final
    `stats` was the one asked for before."""
    client = AdminClient(server, timeout_s=SLOW_S / 5)
    try:
        with pytest.raises(TimeoutError):
            client.call("slow")
        time.sleep(SLOW_S * 1.5)  # the late reply is there by now
        assert client.call("ping") == "pong"
        assert client.call("big") == "x" * BIG
    finally:
        client.close()


def test_a_file_at_the_socket_path_is_refused_not_deleted(tmp_path) -> None:
    """A path that held anything but a socket (a mistyped --admin-socket naming a file)
    looked like a stale socket: connecting to it is refused, so it was deleted."""
    path = tmp_path / "notes.txt"
    path.write_text("keep me\n")
    clock = RealClock()
    try:
        with pytest.raises(OSError, match="is not a socket"):
            AdminServer(str(path), clock, {})
    finally:
        clock.close()
    assert path.read_text() == "keep me\n"
    # a socket left by a killed daemon is still replaced
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(tmp_path / "adm.sock"))
    stale.close()
    clock = RealClock()
    srv = AdminServer(str(tmp_path / "adm.sock"), clock, {})
    srv.close()
    clock.close()
