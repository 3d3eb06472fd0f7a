"""The switch daemon: AF_PACKET ports + the embedded v1model pipeline + P4Runtime.

Like `simple_switch_grpc`: one process per switch, ports given as `-i N@IFACE`,
the pipeline pushed over P4Runtime (or a PROG.p4 compiled at start). On top:

- Readiness: ports are opened first, then the gRPC server and the admin socket;
  only then is readiness signalled (a line `READY ...` on stdout, `--ready-file`
  written atomically, `--ready-fd` written and closed). A gRPC port that accepts
  connections therefore also means the ports are open.
- SIGTERM / SIGINT stop the loop; the daemon closes ports, flushes pcaps and
  removes its sockets. PR_SET_PDEATHSIG makes the kernel signal it when the
  parent dies (plus a 1 s getppid() poll), so a killed run leaves no orphan.
- Interfaces that go down or disappear (ENETDOWN / ENODEV) mark their port
  down without a traceback; the switch keeps serving the others, and the port
  resumes when an interface of its name is up again (AfPacketPort); both
  transitions are logged. A frame the kernel refuses (EMSGSIZE beyond the MTU,
  ...) is a tx drop of that port, logged once per kind; as a PacketOut it is
  answered with a StreamError.
- Link emulation lives in the traffic manager of the loaded pipeline (rates,
  depths) plus a per-port link delay applied here, because the kernel here has
  no netem. Settings persist across pipeline changes.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import gc
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator
from dataclasses import asdict
from typing import Any

from emu.core import netns
from emu.core.port import AfPacketPort
from emu.core.wire import WIRE_OVERHEAD_BYTES
from emu.runtime.admin import AdminServer
from emu.runtime.dataplane import Dataplane
from emu.runtime.device import LocalDevice
from emu.runtime.server import P4RuntimeServer

from .admin_commands import admin_handlers
from .clock import PreciseClock
from .early import PDEATH_SIGNAL, PR_SET_PDEATHSIG
from .options import PortSettings, SwitchOptions
from .pcap import PcapWriter, pcap_paths

log = logging.getLogger("emu.switch")

def set_pdeathsig(sig: int) -> None:
    """Ask the kernel to send `sig` when the parent process exits (Linux prctl)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
        log.warning("prctl(PR_SET_PDEATHSIG) failed: %s", os.strerror(ctypes.get_errno()))


class SwitchDaemon:
    def __init__(self, opts: SwitchOptions) -> None:
        self.opts = opts
        self.clock = PreciseClock(spin_ns=opts.timer_spin_ns)
        self.ports: dict[int, AfPacketPort] = {}
        self.pcaps: dict[int, tuple[PcapWriter, PcapWriter]] = {}
        self.delay_ns: dict[int, int] = {}
        self._senders: dict[int, Any] = {}
        self.no_pipeline_drops: dict[int, int] = {}
        self.no_port_drops: dict[int, int] = {}
        self.pipeline_errors: dict[int, int] = {}
        self._errors_logged: set[str] = set()
        self.device = LocalDevice(opts.device_id, self.clock, cpu_port=opts.cpu_port,
                                  output=self._output,
                                  on_commit=self._apply_settings,
                                  priority_queues=opts.priority_queues, seed=opts.seed,
                                  trust_compiled=opts.trust_compiled_configs)
        self.server = P4RuntimeServer(self.device)
        self.admin: AdminServer | None = None
        self.grpc_port = 0
        self._stop_requested = False

    # ------------------------------------------------------------------ start / stop

    def start(self) -> None:
        o = self.opts
        if o.pcap_dir:
            os.makedirs(o.pcap_dir, exist_ok=True)
            for num, iface in o.interfaces.items():
                pin, pout = pcap_paths(o.pcap_dir, iface)
                self.pcaps[num] = (PcapWriter(pin), PcapWriter(pout))
            self._schedule_pcap_flush()
        ctx = netns.inside(o.port_netns) if o.port_netns else contextlib.nullcontext()
        with ctx:
            for num, iface in sorted(o.interfaces.items()):
                port = AfPacketPort(iface, self.clock)
                self.ports[num] = port
        for num, port in self.ports.items():
            port.set_receiver(self._receiver(num))
            port.on_state = self._port_state(num, port)
        for num in o.interfaces:
            self.delay_ns[num] = int(self.settings(num).delay_us * 1000)
        if o.program:
            self._load_program(o.program)
        self.grpc_port = self.server.start(o.grpc_addr)
        if o.admin_socket:
            self.admin = AdminServer(o.admin_socket, self.clock, admin_handlers(self))
        self._signal_ready()

    def _signal_ready(self) -> None:
        _settle_gc()
        o = self.opts
        info = {"device_id": o.device_id, "pid": os.getpid(), "grpc_port": self.grpc_port,
                "grpc_addr": o.grpc_addr, "admin_socket": o.admin_socket,
                "ports": {str(k): v for k, v in o.interfaces.items()}}
        line = "READY " + json.dumps(info)
        print(line, flush=True)
        log.info("%s", line)
        if o.ready_file:
            tmp = o.ready_file + ".tmp"
            with open(tmp, "w") as f:
                f.write(json.dumps(info) + "\n")
            os.replace(tmp, o.ready_file)
        if o.ready_fd is not None:
            try:
                os.write(o.ready_fd, (json.dumps(info) + "\n").encode())
                os.close(o.ready_fd)
            except OSError:
                pass

    def run(self) -> None:
        self.device.loop_thread = threading.get_ident()
        # RealClock.run() clears a stop() that came before it (a SIGTERM during start-up):
        # the flag, checked on the loop's first turn, keeps that request.
        self.clock.call_soon(lambda: self.clock.stop() if self._stop_requested else None)
        try:
            self.clock.run()
        finally:
            self.device.loop_thread = None

    def stop(self) -> None:
        self._stop_requested = True
        self.clock.stop()

    def watch_parent(self, parent: int, period_ns: int = 1_000_000_000) -> None:
        """Stop when the parent process is gone (re-checked every period_ns)."""
        def check() -> None:
            if os.getppid() != parent:
                log.warning("parent process %d is gone; stopping", parent)
                self.stop()
            else:
                self.clock.call_later(period_ns, check)
        self.clock.call_later(period_ns, check)

    def close(self) -> None:
        try:
            self.server.stop(0.2)
        except Exception:  # shutting down: report, keep closing the rest
            log.exception("stopping the gRPC server")
        if self.admin is not None:
            self.admin.close()
        for p in self.ports.values():
            with contextlib.suppress(OSError):
                p.close()
        for pin, pout in self.pcaps.values():
            pin.close()
            pout.close()
        if self.opts.ready_file:
            with contextlib.suppress(OSError):
                os.unlink(self.opts.ready_file)
        self.clock.close()

    def _schedule_pcap_flush(self) -> None:
        def flush() -> None:
            for pin, pout in self.pcaps.values():
                pin.flush()
                pout.flush()
            self.clock.call_later(100_000_000, flush)
        self.clock.call_later(100_000_000, flush)

    def _load_program(self, path: str) -> None:
        """Compile PROG.p4 and commit it, as if pushed with VERIFY_AND_COMMIT.

        The device config is the p4-source bundle of the files the program reads (so
        GetForwardingPipelineConfig returns something a client can push elsewhere).
        """
        from p4.v1 import p4runtime_pb2

        from emu.p4.frontend import load_program
        from emu.p4.p4info import generate_p4info
        from emu.runtime.devconfig import make_program_config

        p4info = generate_p4info(load_program(path, self.opts.include_dirs))
        cfg = p4runtime_pb2.ForwardingPipelineConfig(
            p4info=p4info,
            p4_device_config=make_program_config(path, self.opts.include_dirs))
        self.server.load_initial(cfg)

    # The per-packet path is written flat (closures over locals, one dict probe) because
    # at ~20 us per packet every Python call shows in the forwarding rate.

    def _receiver(self, num: int) -> Any:
        device = self.device
        pin = self.pcaps[num][0] if num in self.pcaps else None
        drops = self.no_pipeline_drops
        run_due = self.clock.run_due

        pipeline_error = self._pipeline_error

        def receive(frame: bytes) -> None:
            if pin is not None:
                pin.write(frame)
            dp = device.dataplane
            if dp is not None:
                try:
                    dp.inject(num, frame)
                except Exception as exc:  # a pipeline without its own guard (Python ones)
                    pipeline_error(num, exc)
                run_due()  # egress for what the traffic manager can send right away
            else:
                drops[num] = drops.get(num, 0) + 1

        return receive

    def _pipeline_error(self, num: int, exc: Exception) -> None:
        """The pipeline raised on a frame from port `num`: drop it, count it, log once."""
        self.pipeline_errors[num] = self.pipeline_errors.get(num, 0) + 1
        kind = type(exc).__name__
        if kind not in self._errors_logged:
            self._errors_logged.add(kind)
            log.error("pipeline error on a frame from port %d: %s: %s; dropped (further "
                      "ones are only counted)", num, kind, exc)

    def _output(self, num: int, frame: bytes) -> None:
        send = self._senders.get(num)
        if send is None:
            send = self._make_sender(num)
        send(frame)

    def _make_sender(self, num: int) -> Any:
        """The send function of one port: pcap, link delay, down-port logging."""
        port = self.ports.get(num)
        if port is None:
            def no_port(frame: bytes) -> None:
                self.no_port_drops[num] = self.no_port_drops.get(num, 0) + 1
            return no_port
        pout = self.pcaps[num][1] if num in self.pcaps else None
        psend = port.send
        delay = self.delay_ns.get(num, 0)
        call_later = self.clock.call_later
        # A frame is all on the wire a serialisation time after the traffic manager
        # starts it (as on virtual time's MemLink); the veth delivers it at once.
        rate = self.settings(num).rate_bps
        ns_per_byte = 8e9 / rate if rate else 0.0

        send_failed = self.device.send_failed

        def send_now(frame: bytes) -> None:
            if pout is not None:
                pout.write(frame)
            if not psend(frame):
                send_failed(num, port.last_failure)

        now_ns = self.clock.now_ns
        free_at = [0]  # when the port's transmitter has sent its last frame

        if not delay and not ns_per_byte:
            fn: Any = send_now
        else:
            def fn(frame: bytes) -> None:
                # One transmitter: a frame handed over while another is on the wire
                # (a PAUSE or credit update beside the traffic manager's frames) goes
                # after it, so the peer sees the order they were sent in.
                now = now_ns()
                done = (max(now, free_at[0])
                        + int((len(frame) + WIRE_OVERHEAD_BYTES) * ns_per_byte))
                free_at[0] = done
                call_later(done - now + delay, lambda: send_now(frame))
        self._senders[num] = fn
        return fn

    def _port_state(self, num: int, port: AfPacketPort) -> Any:
        def changed(up: bool, why: str) -> None:
            if up:
                log.warning("port %d (%s) is up (%s): forwarding resumes", num, port.iface, why)
            else:
                log.warning("port %d (%s) is down (%s): its frames are dropped until it "
                            "comes back", num, port.iface, why)
        return changed

    # ------------------------------------------------------------------ settings

    def settings(self, num: int | None) -> PortSettings:
        if num is None:
            return self.opts.default_port
        return self.opts.ports.get(num, self.opts.default_port)

    def settings_for_update(self, num: int | None) -> list[PortSettings]:
        """The settings objects a change for `num` (None = all) must touch."""
        if num is None:
            return [self.opts.default_port, *self.opts.ports.values()]
        if num not in self.opts.ports:
            self.opts.ports[num] = PortSettings(**asdict(self.opts.default_port))
        return [self.opts.ports[num]]

    def _apply_settings(self, dp: Dataplane) -> None:
        """Push stored queue settings into a freshly committed pipeline."""
        _settle_gc()
        d = self.opts.default_port
        if d.rate_bps or d.rate_pps:
            dp.set_queue_rate(None, rate_bps=d.rate_bps, rate_pps=d.rate_pps)
        if d.depth_pkts is not None:
            dp.set_queue_depth(None, d.depth_pkts)
        ports = set(self.opts.interfaces) | set(self.opts.ports)
        for num in sorted(ports):
            s = self.settings(num)
            if s.rate_bps or s.rate_pps:
                dp.set_queue_rate(num, rate_bps=s.rate_bps, rate_pps=s.rate_pps)
            if s.depth_pkts is not None:
                dp.set_queue_depth(num, s.depth_pkts)
        fc = self.opts.flow_control
        if fc is not None and fc.enabled and hasattr(dp, "enable_flow_control"):
            kw: dict[str, Any] = {"links": dict(self.opts.pfc_links)}
            if fc.mode == "credit" and self.opts.cpu_port is not None:
                kw["no_credit_ports"] = {self.opts.cpu_port}  # no link peer to grant it
            ctl = dp.enable_flow_control(fc, **kw)  # after the rates: quanta, periods
            start = getattr(ctl, "start", None)
            if start is not None:
                start()  # credit mode: announce each port's credit
            report = getattr(ctl, "headroom_report", None)
            for port, h in (report() if report is not None else {}).items():
                logging.getLogger("emu.pfc").info(  # too small: limits() warns
                    "port %d: PFC headroom %s bytes configured, %s needed by its link",
                    port, h["configured"], h["needed"])

    def reset_senders(self) -> None:
        """Forget the per-port send functions: rebuilt (new link delay) on next use."""
        self._senders.clear()


# ---------------------------------------------------------------------- entry point


def _settle_gc() -> None:
    """Keep the cyclic GC off the long-lived objects (modules, gRPC, tables).

    Per-packet work allocates many small objects, which triggers collections;
    a full collection walking every object the process holds costs milliseconds
    and shows as latency spikes. Freezing what exists now (after start-up or a
    pipeline commit) leaves the collector only the young objects.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 50, 1000)



# The kernel sends PDEATH_SIGNAL (early.py) when the *thread* that forked us exits,
# which can happen while the parent process lives on (a multi-threaded launcher); so it
# is not SIGTERM, and its handler checks that the parent process is really gone. A 1 s
# poll of getppid() covers that launcher case once its process does exit.


@contextlib.contextmanager
def _signals(daemon: SwitchDaemon, parent: int | None) -> Iterator[None]:
    def stop(signum: int, frame: object) -> None:
        daemon.stop()

    def parent_gone(signum: int, frame: object) -> None:
        if parent is not None and os.getppid() != parent:
            daemon.stop()

    old = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
    old[PDEATH_SIGNAL] = signal.signal(PDEATH_SIGNAL, parent_gone)
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def setup_logging(console: bool, log_file: str | None, level: str) -> None:
    handlers: list[logging.Handler] = []
    if console:
        handlers.append(logging.StreamHandler(sys.stderr))
    if log_file:
        try:
            handlers.append(logging.FileHandler(log_file))
        except OSError as exc:
            raise SystemExit(f"error: --log-file {log_file}: {exc.strerror or exc}") from None
    if not handlers:
        handlers.append(logging.StreamHandler(sys.stderr))
        level = "WARNING" if level == "INFO" else level
    logging.basicConfig(level=getattr(logging, level.upper()), handlers=handlers,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", force=True)


def run_switch(opts: SwitchOptions) -> int:
    from . import early

    # The parent as first seen (`python -m emu.switch` reads it before its imports).
    parent = opts.parent_pid or early.launcher_pid or os.getppid()
    watch: int | None = None
    if opts.pdeathsig:
        set_pdeathsig(PDEATH_SIGNAL)
        if os.getppid() != parent:  # the parent died before prctl took effect
            log.warning("parent process %d is gone; not starting", parent)
            return 1
        watch = parent
    daemon = SwitchDaemon(opts)
    with _signals(daemon, watch):
        try:
            if watch is not None:
                daemon.watch_parent(watch)
            daemon.start()
        except Exception as exc:
            log.error("cannot start the switch: %s", exc)
            print(f"error: cannot start the switch: {exc}", file=sys.stderr)
            daemon.close()
            # A taken address has its own status: the launcher may retry on another port.
            in_use = isinstance(exc, OSError) and exc.errno == errno.EADDRINUSE
            return errno.EADDRINUSE if in_use else 1
        try:
            daemon.run()
        finally:
            daemon.close()
    log.info("switch %d stopped", opts.device_id)
    return 0
