"""The switch admin protocol: queue and link settings at run time (BMv2's
`simple_switch_CLI set_queue_rate / set_queue_depth`, plus what BMv2 lacks).

Transport: a unix stream socket (`--admin-socket PATH`), one JSON object per
line each way. Request: `{"id": <any>, "cmd": "<name>", ...args}`. Reply:
`{"id": <same>, "ok": true, "result": ...}` or `{"id": ..., "ok": false,
"error": "<message>"}`. Requests on one connection are answered in order.

Commands (`port` omitted or null = every port and the default for new ones):
- `ping` -> {"device_id", "pid", "ports": {port: iface}}
- `set_queue_rate` {port?, rate_bps? | rate_pps?}: bits per second (frame size
  dependent serialisation) or packets per second (BMv2's unit); neither or 0
  removes the limit.
- `set_queue_depth` {port?, depth_pkts, priority?}: capacity in packets (tail drop).
- `set_link_delay` {port?, delay_us}: one-way delay added after serialisation.
- `get_port_config` {port} -> {"depths_pkts", "rate_bps", "rate_pps", "delay_us",
  "priority_queues", ...}
- `stats` -> {"ports": {port: {"iface", "rx_frames", "tx_frames", "tx_drops",
  "kernel_drops", "down", "queue": {...}}}, "drops": {port: {reason: n}},
  "p4runtime": {...}}
- `drops` -> {port: {reason: n}} (traffic manager and pipeline drops)

Example: `echo '{"cmd":"set_queue_rate","port":2,"rate_pps":1000}' | socat - UNIX:/tmp/s1.sock`
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from emu.core.clock import TimerHandle

__all__ = ["AdminClient", "AdminError", "AdminServer", "Handler"]

Handler = Callable[[dict[str, Any]], Any]
MAX_LINE = 1 << 20
MAX_PENDING = 1 << 20  # reply bytes a client may leave unread before it is dropped
FLUSH_RETRY_NS = 5_000_000


class AdminError(Exception):
    """The switch answered ok=false."""


@dataclass
class _Conn:
    """One client: its socket, the request bytes not yet a line, and the reply bytes
    the socket has not taken yet."""

    sock: socket.socket
    inbuf: bytearray = field(default_factory=bytearray)
    outbuf: bytearray = field(default_factory=bytearray)
    retry: TimerHandle | None = None


class AdminServer:
    """Serve the protocol on a RealClock reactor (handlers run on the loop thread).

    Replies are written without blocking: what a client's socket does not take yet
    waits in its buffer and is retried every FLUSH_RETRY_NS, so a client that sends
    requests and does not read its replies never stalls the reactor (which forwards
    the switch's packets); one that lets more than MAX_PENDING bytes pile up is
    disconnected."""

    def __init__(self, path: str, clock: Any, handlers: dict[str, Handler]) -> None:
        self.path = path
        self.clock = clock
        self.handlers = handlers
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.bind(path)
        except OSError:
            # A stale socket from a killed run: replace it only if nobody answers there.
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(path)
                probe.close()
                self._sock.close()
                raise OSError(f"admin socket {path} is in use") from None
            except (ConnectionRefusedError, FileNotFoundError):
                probe.close()
                try:  # connecting to a regular file is refused too: never delete one
                    is_socket = stat.S_ISSOCK(os.lstat(path).st_mode)
                except FileNotFoundError:
                    is_socket = True  # gone meanwhile: bind below
                if not is_socket:
                    self._sock.close()
                    raise OSError(f"admin socket {path}: the path exists and is not a "
                                  "socket") from None
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
                self._sock.bind(path)
        self._sock.listen(16)
        self._sock.setblocking(False)
        self._conns: dict[int, _Conn] = {}
        clock.add_reader(self._sock.fileno(), self._accept)

    def _accept(self) -> None:
        try:
            sock, _ = self._sock.accept()
        except (BlockingIOError, OSError):
            return
        sock.setblocking(False)
        fd = sock.fileno()
        self._conns[fd] = _Conn(sock)
        self.clock.add_reader(fd, lambda: self._read(fd))

    def _drop(self, fd: int) -> None:
        conn = self._conns.pop(fd, None)
        self.clock.remove_reader(fd)
        if conn is not None:
            if conn.retry is not None:
                conn.retry.cancel()
            conn.sock.close()

    def _read(self, fd: int) -> None:
        conn = self._conns.get(fd)
        if conn is None:
            return
        try:
            data = conn.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            self._drop(fd)
            return
        if not data:
            self._drop(fd)
            return
        buf = conn.inbuf
        buf += data
        while (nl := buf.find(b"\n")) >= 0:
            line = bytes(buf[:nl])
            del buf[:nl + 1]
            if line.strip():
                conn.outbuf += self.handle_line(line)
        if len(buf) > MAX_LINE:
            self._drop(fd)
            return
        self._flush(fd)

    def _retry(self, fd: int) -> None:
        conn = self._conns.get(fd)
        if conn is not None:
            conn.retry = None
            self._flush(fd)

    def _flush(self, fd: int) -> None:
        conn = self._conns.get(fd)
        if conn is None:
            return
        out = conn.outbuf
        try:
            while out:
                del out[:conn.sock.send(out)]
        except BlockingIOError:
            pass
        except OSError:
            self._drop(fd)
            return
        if len(out) > MAX_PENDING:
            self._drop(fd)
        elif out and conn.retry is None:  # one pending retry per client, not one per read
            conn.retry = self.clock.call_later(FLUSH_RETRY_NS, lambda: self._retry(fd))

    def handle_line(self, line: bytes) -> bytes:
        rid: Any = None
        try:
            req = json.loads(line)
            if not isinstance(req, dict):
                raise ValueError("a request is a JSON object")
            rid = req.get("id")
            cmd = req.get("cmd")
            fn = self.handlers.get(cmd) if isinstance(cmd, str) else None
            if fn is None:
                raise ValueError(f"unknown command {cmd!r}; known: {sorted(self.handlers)}")
            # Strict JSON out (no NaN): a client in another language must parse it.
            text = json.dumps({"id": rid, "ok": True, "result": fn(req)}, allow_nan=False)
        except Exception as exc:  # reported to the client, never fatal to the switch
            error = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
            try:
                text = json.dumps({"id": rid, **error}, allow_nan=False)
            except ValueError:  # the request's id itself is not strict JSON (NaN)
                text = json.dumps({"id": None, **error})
        return (text + "\n").encode()

    def close(self) -> None:
        for fd in list(self._conns):
            self._drop(fd)
        self.clock.remove_reader(self._sock.fileno())
        self._sock.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass


class AdminClient:
    """Blocking client, one connection; thread-safe."""

    def __init__(self, path: str, timeout_s: float = 5.0) -> None:
        self.path = path
        self.timeout_s = timeout_s
        self._sock: socket.socket | None = self._connect()
        self._buf = b""
        self._lock = threading.Lock()
        self._next = 0

    def _connect(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout_s)
        try:
            sock.connect(self.path)
        except BaseException:
            sock.close()
            raise
        return sock

    def call(self, cmd: str, **args: Any) -> Any:
        with self._lock:
            self._next += 1
            rid = self._next
            if self._sock is None:
                self._sock, self._buf = self._connect(), b""
            try:
                self._sock.sendall((json.dumps({"id": rid, "cmd": cmd, **args}) + "\n").encode())
                while b"\n" not in self._buf:
                    chunk = self._sock.recv(65536)
                    if not chunk:
                        raise ConnectionError("switch closed the admin connection")
                    self._buf += chunk
            except BaseException:
                # Cut short (Ctrl-C, a timeout): this request's reply may still come, and
                # the next call would take it for its own. A new connection starts clean.
                self._sock.close()
                self._sock = None
                raise
            line, _, self._buf = self._buf.partition(b"\n")
        reply = json.loads(line)
        if not reply.get("ok"):
            raise AdminError(reply.get("error", "unknown error"))
        return reply.get("result")

    def ping(self) -> dict[str, Any]:
        return dict(self.call("ping"))

    def set_queue_rate(self, port: int | None = None, *, rate_bps: float | None = None,
                       rate_pps: float | None = None) -> None:
        self.call("set_queue_rate", port=port, rate_bps=rate_bps, rate_pps=rate_pps)

    def set_queue_depth(self, port: int | None, depth_pkts: int,
                        priority: int | None = None) -> None:
        self.call("set_queue_depth", port=port, depth_pkts=depth_pkts, priority=priority)

    def set_link_delay(self, port: int | None, delay_us: float) -> None:
        self.call("set_link_delay", port=port, delay_us=delay_us)

    def get_port_config(self, port: int) -> dict[str, Any]:
        return dict(self.call("get_port_config", port=port))

    def stats(self) -> dict[str, Any]:
        return dict(self.call("stats"))

    def drops(self) -> dict[str, dict[str, int]]:
        return dict(self.call("drops"))

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
