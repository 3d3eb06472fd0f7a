"""Host agent: runs a workload of flows over one NIC and reports per-flow results.

Protocol with an orchestrator:
- stdout line `READY` once the port is open and QPs exist (also `ready` in --status-file);
- flows start at `start_us` after READY, or when every flow in `after` has completed
  locally (sent and acknowledged) or has been received (ring all-reduce steps); with
  --start-on-stdin the clock starts instead at the instant of the orchestrator's stdin
  line `START <time.monotonic_ns()>`, the same for every agent of a run (a bad line or
  stdin closed first: exit 1);
- results are JSON lines (one per flow, then one `summary` line) on --results or stdout;
  where --results cannot be written (disk full), they come on stdout as one line
  `{"type": "results", "rows": [...], "error": "..."}` instead, so nothing measured is lost;
- a flow whose QP runs out of transport retries fails (its row's `status`), and so do the
  local flows waiting on it; its progress lines list the flows that failed (`failed`,
  the last line printed as the agent ends), and the orchestrator's stdin lines
  `LOST ["id", ...]` name the flows that failed elsewhere, which it then stops waiting
  for (docs/failures.md);
- exit status 0 when all local flows completed and all `expect`ed flows arrived, 2 when
  stopped early (SIGTERM/SIGINT or timeout_s: partial results are still written) or
  when a flow failed, 1 on configuration errors. The status file then holds `done`,
  `partial` or `error`.

Flows are identified on the wire by the immediate data of their last packet:
imm = CRC-32 of the flow id, so receivers need no out-of-band knowledge of the order.
"""

from __future__ import annotations

import contextlib
import dataclasses
import heapq
import json
import os
import signal
import stat
import sys
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from emu.core.clock import Clock
from emu.core.port import FramePort
from emu.roce.config import AgentConfig, FlowConfig
from emu.roce.credit import HostCreditMac, HostCreditParams
from emu.roce.nic import Nic
from emu.roce.payload import LazyPayload
from emu.roce.pfc import HostMac, HostPfcParams
from emu.roce.qp import Message, QueuePair, WorkRequest

if TYPE_CHECKING:
    from emu.core.clock import RealClock


def flow_imm(flow_id: str) -> int:
    return zlib.crc32(flow_id.encode())


def lazy_flow_payload(flow_id: str, size: int) -> LazyPayload:
    """Deterministic content, so a receiver's digest can be checked against the sender's;
    generated per packet as it is sent, so a flow's size costs no memory."""
    return LazyPayload(b"emu-flow:" + flow_id.encode(), size)


def _start_ns(start_us: float) -> int:
    """A flow's start offset in whole ns, rounded: truncating start_us x 1000 lost a
    nanosecond whenever the product fell just below the integer (as it does or not
    depending on the start delay added to a Poisson arrival time)."""
    return round(start_us * 1000)


def flow_payload(flow_id: str, size: int) -> bytes:
    """The bytes a flow carries, materialised (for checks on small flows)."""
    return lazy_flow_payload(flow_id, size).tobytes()


@dataclass
class _FlowState:
    cfg: FlowConfig
    qp: QueuePair
    index: int  # its place in the workload: flows that can start together start in order
    posted_ns: int | None = None
    done_ns: int | None = None
    data: LazyPayload | None = None
    wr: WorkRequest | None = None
    # How it ended: its completion's status (WorkRequest.status: "success",
    # "retry_exc_err", "wr_flush_err"), or "dependency_failed" (a flow it waits on can
    # no longer arrive, so it never starts); None while it may still go.
    status: str | None = None


def host_mac(clock: Clock, port: FramePort,
             params: HostPfcParams | HostCreditParams) -> HostMac | HostCreditMac:
    """The link-level flow control MAC the NIC sends through: PFC or credits."""
    if isinstance(params, HostCreditParams):
        return HostCreditMac(clock, port, params)
    return HostMac(clock, port, params)


class Agent:
    def __init__(self, cfg: AgentConfig, clock: Clock, port: FramePort, *,
                 pfc: HostPfcParams | HostCreditParams | None = None) -> None:
        """`pfc`: the NIC sends through a PFC-aware MAC (emu.roce.pfc.HostMac) that
        honours PAUSE from the leaf; None: straight onto `port` (no flow control)."""
        self.cfg = cfg
        self.clock = clock
        self.mac: HostMac | HostCreditMac | None = None
        if pfc is not None:
            port = self.mac = host_mac(clock, port, pfc)
        self.nic = Nic(clock, port, cfg.nic_params())
        self.peers: dict[int, str] = {}
        for q in cfg.qps:
            qp = self.nic.add_qp(cfg.qp_params(q))
            qp.responder.on_message = self._receiver_for(qp)
            self.peers[q.qpn] = q.peer or q.peer_ip
        self.flows = {f.id: _FlowState(f, self.nic.qps[f.qpn], i)
                      for i, f in enumerate(cfg.flows)}
        self._order = list(self.flows.values())
        # Local flows (indexes) waiting on each flow id; those touched since looked at.
        self._waiting_on: dict[str, list[int]] = {}
        for fs in self._order:
            for dep in dict.fromkeys(fs.cfg.after):
                self._waiting_on.setdefault(dep, []).append(fs.index)
        self._touched: set[int] = set()
        self.imm_to_flow = {flow_imm(fid): fid for fid in list(self.flows) + cfg.expect}
        self.received: dict[str, tuple[QueuePair, Message]] = {}  # the first delivery
        # Deliveries per flow id: exactly one each, else the flow fails verification.
        self.deliveries: Counter[str] = Counter()
        self.unexpected: list[dict[str, Any]] = []
        # Flows from other hosts that will never arrive (their sender's QP failed, or
        # they wait on one that did): the orchestrator tells (mark_lost).
        self.lost: set[str] = set()
        self._failed: list[str] = []  # local flows that ended undelivered, in order
        self.t0 = 0
        self.on_change: Callable[[], None] | None = None

    # -- workload -----------------------------------------------------------------------
    def start(self, at_ns: int | None = None) -> None:
        """Start the workload clock at `at_ns` (clock time; default now): flows start
        `start_us` after it and every reported time counts from it."""
        self.t0 = self.clock.now_ns() if at_ns is None else at_ns
        for fs in self._order:
            self.clock.call_at(self.t0 + _start_ns(fs.cfg.start_us), self._start_time(fs))

    def _start_time(self, fs: _FlowState) -> Callable[[], None]:
        def due() -> None:
            self._touched.add(fs.index)
            self._maybe_start()
        return due

    def _resolved(self, fid: str) -> None:
        """Flow `fid` completed, arrived or never will: look at its waiters again."""
        self._touched.update(self._waiting_on.get(fid, ()))

    def _dep_done(self, fid: str) -> bool:
        fs = self.flows.get(fid)
        if fs is not None and fs.done_ns is not None:
            return True
        return fid in self.received

    def _dep_lost(self, fid: str) -> bool:
        fs = self.flows.get(fid)
        if fs is not None and fs.status not in (None, "success"):
            return True
        return fid in self.lost

    def _maybe_start(self) -> None:
        """Post the flows that can start now and end those that never can: those
        something happened to (start time, a flow they wait on resolved), in passes in
        workload order as a scan of all would (which, per completion, took most of a
        128-rank all-reduce's run)."""
        now = self.clock.now_ns()
        while self._touched:  # a flow that can never start ends the ones waiting on it
            this_pass = sorted(self._touched)  # sorted: a heap already
            self._touched = set()
            while this_pass:
                i = heapq.heappop(this_pass)
                fs = self._order[i]
                if fs.posted_ns is not None or fs.status is not None:
                    continue
                if any(self._dep_lost(d) for d in fs.cfg.after):
                    fs.status = "dependency_failed"
                    self._failed.append(fs.cfg.id)
                    for j in self._waiting_on.get(fs.cfg.id, ()):  # later ones this pass
                        if j > i:
                            heapq.heappush(this_pass, j)
                        else:
                            self._touched.add(j)
                elif (now >= self.t0 + _start_ns(fs.cfg.start_us)
                      and all(self._dep_done(d) for d in fs.cfg.after)):
                    self._post(fs, now)

    def _post(self, fs: _FlowState, now: int) -> None:
        f = fs.cfg
        data = lazy_flow_payload(f.id, f.size_bytes)
        # Its SHA-256 is taken with the results: by then the sending has made (and
        # hashed) the blocks, which a digest now would make a first time in advance.
        fs.data = data
        fs.posted_ns = now

        def on_complete(wr: WorkRequest) -> None:
            if wr.status == "success":
                self._sent(fs)
            else:  # the QP went to the error state
                fs.status = wr.status
                self._failed.append(fs.cfg.id)
                self._resolved(fs.cfg.id)
                self._changed()

        fs.wr = fs.qp.post_send(data, f.op, imm=flow_imm(f.id), va=f.va, rkey=f.rkey,
                                on_complete=on_complete)

    def _sent(self, fs: _FlowState) -> None:
        fs.done_ns = self.clock.now_ns()
        fs.status = "success"
        self._resolved(fs.cfg.id)
        self._changed()

    def _receiver_for(self, qp: QueuePair) -> Callable[[Message], None]:
        def on_message(msg: Message) -> None:
            fid = self.imm_to_flow.get(msg.imm if msg.imm is not None else -1)
            if fid is None:
                self.unexpected.append({"qpn": qp.qpn, "imm": msg.imm, "size_bytes": msg.length})
            else:
                self.deliveries[fid] += 1
                if fid not in self.received:
                    self.received[fid] = (qp, msg)
                    self._resolved(fid)
            self._changed()
        return on_message

    def _changed(self) -> None:
        self._maybe_start()
        if self.on_change is not None:
            self.on_change()

    def done(self) -> bool:
        """Nothing left to wait for: every local flow ended (well or not) and every
        expected flow arrived or will never arrive."""
        return (all(fs.status is not None for fs in self.flows.values())
                and all(fid in self.received or fid in self.lost for fid in self.cfg.expect))

    def ok(self) -> bool:
        """Every local flow completed and every expected flow arrived."""
        return (all(fs.done_ns is not None for fs in self.flows.values())
                and all(fid in self.received for fid in self.cfg.expect))

    def failed_flows(self) -> list[str]:
        """Local flows that ended without being delivered (their QP failed, or a flow
        they wait on did)."""
        return list(self._failed)

    def mark_lost(self, fids: set[str]) -> None:
        """Flows that will never arrive (failed at their sender, or waiting on one that
        did): expected ones stop being waited for, local ones waiting on them end."""
        new = (fids - self.lost) - self.flows.keys()
        if new:
            self.lost |= new
            for fid in new:
                self._resolved(fid)
            self._changed()

    # -- results -----------------------------------------------------------------------
    @staticmethod
    def _qp_counters(qp: QueuePair) -> dict[str, int]:
        rs, ps = qp.requester.stats, qp.responder.stats
        return {"retx_pkts": rs.retx_pkts, "timeouts": rs.timeouts, "cnps_rcvd": rs.cnps_rcvd,
                "repaths": rs.repaths, "cnps_sent": ps.cnps_sent,
                "ecn_marked_rcvd": ps.ecn_marked_rcvd, "data_pkts_sent": rs.data_pkts_sent}

    @staticmethod
    def _flow_counters(fs: _FlowState) -> dict[str, int]:
        """The flow's own counters, kept on its message: the QP's counter change between
        its post and completion counted every flow the QP carried meanwhile (mix on
        clos4: per-flow CNPs summed to 446 against 430 received)."""
        wr = fs.wr
        if wr is None:
            return {}
        sent = fs.qp.requester.first_sends(wr) + wr.retx_pkts
        return {"retx_pkts": wr.retx_pkts, "timeouts": wr.timeouts, "cnps_rcvd": wr.cnps_rcvd,
                "repaths": wr.repaths, "data_pkts_sent": sent}

    def _rate_samples(self, qp: QueuePair, t_from: int, t_to: int | None) -> list[list[float]]:
        rp = qp.rp
        if rp is None:
            return []
        d = self.nic.dilation
        pts = [(t, r) for t, r in rp.trace if t <= (t_to if t_to is not None else t) and t >= t_from]
        before = [(t, r) for t, r in rp.trace if t < t_from]
        if before:
            pts.insert(0, (t_from, before[-1][1]))
        limit = max(2, self.cfg.rate_samples_max)
        if len(pts) > limit:
            step = len(pts) / limit
            pts = [pts[int(i * step)] for i in range(limit)]
        return [[t - self.t0, d.modelled_rate_bps(r)] for t, r in pts]

    def results(self) -> list[dict[str, Any]]:
        d = self.nic.dilation
        out: list[dict[str, Any]] = []
        now = self.clock.now_ns()
        for fid, fs in self.flows.items():
            f = fs.cfg
            delta = self._flow_counters(fs)
            fct = None if fs.done_ns is None or fs.posted_ns is None else fs.done_ns - fs.posted_ns
            rec: dict[str, Any] = {
                "type": "flow", "role": "sender", "flow": fid, "host": self.cfg.host.name,
                "peer": self.peers.get(f.qpn), "qpn": f.qpn, "op": f.op, "size_bytes": f.size_bytes,
                "completed": fs.done_ns is not None, "status": fs.status,
                "start_ns": None if fs.posted_ns is None
                else fs.posted_ns - self.t0,
                "complete_ns": None if fs.done_ns is None else fs.done_ns - self.t0,
                "fct_ns": fct, "fct_nominal_ns": None if fct is None else d.modelled_ns(fct),
                "goodput_bps": None if not fct else f.size_bytes * 8e9 / fct,
                "goodput_nominal_bps": None if not fct else d.modelled_rate_bps(f.size_bytes * 8e9 / fct),
                "sha256": fs.data.sha256() if fs.data is not None else None, **delta,
                "rate_samples": [] if fs.posted_ns is None
                else self._rate_samples(fs.qp, fs.posted_ns, fs.done_ns or now),
            }
            out.append(rec)
        for fid in self.cfg.expect:
            got = self.received.get(fid)
            rec = {"type": "flow", "role": "receiver", "flow": fid, "host": self.cfg.host.name,
                   "completed": got is not None, "deliveries": self.deliveries[fid],
                   "lost": fid in self.lost}
            if got is not None:
                qp, msg = got
                rec.update({"qpn": qp.qpn, "peer": self.peers.get(qp.qpn), "op": msg.op,
                            "size_bytes": msg.length, "first_ns": msg.first_ns - self.t0,
                            "complete_ns": msg.completed_ns - self.t0, "sha256": msg.sha256,
                            "ecn_marked_rcvd": msg.ecn_marked})
            out.append(rec)
        out.append(self.summary())
        return out

    def progress(self) -> dict[str, Any]:
        """Counters so far, summed over the QPs (the orchestrator's live view)."""
        c = {"data_pkts_sent": 0, "retx_pkts": 0, "timeouts": 0, "cnps_rcvd": 0,
             "cnps_sent": 0, "ecn_marked_rcvd": 0}
        for qp in self.nic.qps.values():
            for k, v in self._qp_counters(qp).items():
                if k in c:
                    c[k] += v
        return {"type": "progress", "host": self.cfg.host.name,
                "t_ns": self.clock.now_ns() - self.t0, **c,
                "flows_done": sum(fs.done_ns is not None for fs in self.flows.values()),
                "received": len(self.received), "tx_lag_max_us": self.nic.tx_lag_max_ns / 1000,
                "failed": self.failed_flows()}

    def summary(self) -> dict[str, Any]:
        qps = {}
        for qpn, qp in self.nic.qps.items():
            rs = qp.requester.stats
            qps[str(qpn)] = {
                "requester": dict(rs.__dict__), "responder": qp.responder.stats.as_dict(),
                "udp_sport": qp.udp_sport, "recovery": qp.params.recovery,
                "rate_bps_nominal": None if qp.rp is None else self.nic.dilation.modelled_rate_bps(qp.rp.rc),
                "np_suppressed": None if qp.responder.np is None else qp.responder.np.suppressed,
            }
        st = self.nic.port.stats
        return {"type": "summary", "host": self.cfg.host.name, "done": self.ok(),
                "elapsed_ns": self.clock.now_ns() - self.t0, "nic_drops": dict(self.nic.drops),
                "ctrl_tx_drops": self.nic.ctrl_tx_drops, "tx_stalls": self.nic.tx_stalls,
                "tx_lag": self.nic.tx_lag_stats(),
                "dcqcn_clamped": self.nic.clamped, "unexpected_messages": self.unexpected,
                "cc": "dcqcn" if self.nic.dcqcn.enabled else "none",
                "duplicate_deliveries": {f: n for f, n in self.deliveries.items() if n > 1},
                "port": dataclasses.asdict(st), "qps": qps,
                **self._flow_control_counters()}

    def _flow_control_counters(self) -> dict[str, Any]:
        """The host MAC's counters: "pfc" (PAUSE frames, paused time) or "credit"."""
        if self.mac is None:
            return {}
        key = "credit" if isinstance(self.mac, HostCreditMac) else "pfc"
        return {key: self.mac.counters()}


def write_results(rows: list[dict[str, Any]], out: IO[str]) -> None:
    for r in rows:
        out.write(json.dumps(r, sort_keys=True) + "\n")
    out.flush()


def deliver_results(rows: list[dict[str, Any]], results: str | None) -> None:
    """The rows to the results file, or to stdout where there is none. A file that
    cannot be written (disk full, folder gone) costs the file, not the measurement:
    the rows then go to the orchestrator on stdout as one `results` line."""
    if not results:
        write_results(rows, sys.stdout)
        return
    try:
        with open(results, "w") as fh:
            write_results(rows, fh)
    except OSError as exc:
        why = f"cannot write {results}: {exc.strerror or exc}"
        with contextlib.suppress(OSError):  # what was written before the disk filled
            if stat.S_ISREG(os.lstat(results).st_mode):  # never a device such as /dev/full
                os.unlink(results)
        print(json.dumps({"type": "results", "rows": rows, "error": why}, sort_keys=True),
              flush=True)
        with contextlib.suppress(OSError):  # stderr may be a file on the same full disk
            print(f"warning: {why}; results sent on stdout", file=sys.stderr)


START = "START"  # the orchestrator's line on stdin: `START <time.monotonic_ns()>`
# Its later lines: `LOST <JSON list of flow ids>`, flows that will never arrive (they
# failed at their sender, or wait on one that did; emu.experiments.failures).
LOST = "LOST"


def parse_start(line: str) -> int:
    """The instant of a `START <monotonic ns>` line; ValueError naming what is wrong."""
    parts = line.split()
    if len(parts) != 2 or parts[0] != START or not parts[1].isdigit():
        raise ValueError(f"expected '{START} <time.monotonic_ns()>' on stdin, got {line.strip()!r}")
    return int(parts[1])


def parse_lost(line: str) -> set[str]:
    """The flow ids of a `LOST [...]` line; ValueError naming what is wrong."""
    word, _, rest = line.strip().partition(" ")
    try:
        ids = json.loads(rest) if word == LOST else None
    except json.JSONDecodeError:
        ids = None
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise ValueError(f"expected '{LOST} [\"flow id\", ...]' on stdin, got {line.strip()!r}")
    return set(ids)


def _start_from_stdin(agent: Agent, clock: RealClock, fail: Callable[[str], None]) -> None:
    """Start the agent when the orchestrator's START line arrives on stdin, at the instant
    it names: every agent of a run then counts from one epoch, however long each took to
    become READY. The clock's loop keeps running meanwhile (signals still stop it).
    Later LOST lines tell it which flows will never arrive; a bad one is reported on
    stderr and ignored (the run goes on), stdin closed after START changes nothing."""
    fd = sys.stdin.fileno()
    buf = bytearray()
    started = False

    def on_read() -> None:
        nonlocal started
        data = os.read(fd, 65536)
        buf.extend(data)
        while b"\n" in buf or (not data and buf):
            raw, _, rest = bytes(buf).partition(b"\n")
            buf[:] = rest
            line = raw.decode(errors="replace")
            if not started:
                try:
                    at = parse_start(line)
                except ValueError as exc:
                    clock.remove_reader(fd)
                    fail(str(exc))
                    return
                started = True
                agent.start(clock.from_monotonic_ns(at))
            elif line.strip():
                try:
                    agent.mark_lost(parse_lost(line))
                except ValueError as exc:
                    print(f"warning: {exc}", file=sys.stderr, flush=True)
        if not data:
            clock.remove_reader(fd)
            if not started:
                fail(f"stdin closed before the {START} line")

    clock.add_reader(fd, on_read)


def _progress_reports(agent: Agent, clock: RealClock, progress_s: float
                      ) -> Callable[[], None]:
    """Print the agent's counters every `progress_s` (none if 0); returns the function
    that prints one line, for the last."""
    def line() -> None:
        # One short line per period: cheap next to the packets, and the orchestrator
        # sees CNPs, ECN marks and failed flows while the run goes on.
        print(json.dumps(agent.progress(), sort_keys=True), flush=True)

    if progress_s <= 0:
        return lambda: None
    period = int(progress_s * 1e9)

    def report() -> None:
        line()
        clock.call_at(clock.now_ns() + period, report)

    clock.call_at(clock.now_ns() + period, report)
    return line


def _host_flow_control(cfg: AgentConfig, pfc: str) -> HostPfcParams | HostCreditParams:
    """The NIC's PFC or credit parameters from --pfc's JSON (ValueError if bad)."""
    from emu.roce.pfc import host_pfc_params

    # Quanta last 512 bit times of the wire (no pacing: the modelled 100 Gb/s).
    rate = (cfg.nic.line_rate_bps or 100e9) / cfg.nic.time_dilation
    settings = json.loads(pfc)
    if settings.get("mode") == "credit":
        from emu.roce.credit import host_credit_params

        return host_credit_params(settings, cfg.host.mac, rate)
    return host_pfc_params(settings, cfg.host.mac, rate)


def run(iface: str, config: str, results: str | None = None, status_file: str | None = None,
        linger_s: float = 0.3, progress_s: float = 0.0, pfc: str | None = None,
        start_on_stdin: bool = False) -> int:
    """Entry point of `python -m emu.roce agent` (see the module docstring)."""
    from emu.core.clock import RealClock
    from emu.core.port import AfPacketPort, DelayedPort
    from emu.core.wire import WIRE_OVERHEAD_BYTES
    from emu.roce.config import ConfigError, load

    def status(s: str) -> None:
        # Advisory (stdout carries the same words): a full disk must not end the agent.
        if status_file:
            with contextlib.suppress(OSError):
                tmp = Path(status_file + ".tmp")
                tmp.write_text(s + "\n")
                tmp.replace(status_file)

    try:
        cfg = load(config)
    except (ConfigError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        status("error")
        return 1
    host_pfc: HostPfcParams | HostCreditParams | None = None
    if pfc:
        try:
            host_pfc = _host_flow_control(cfg, pfc)
        except ValueError as exc:  # json.JSONDecodeError is one
            print(f"error: --pfc: {exc}", file=sys.stderr)
            status("error")
            return 1
    clock = RealClock()
    try:
        port: FramePort = AfPacketPort(iface, clock)
    except OSError as exc:  # no such interface, not root
        print(f"error: --iface {iface}: {exc.strerror or exc}", file=sys.stderr)
        status("error")
        clock.close()
        return 1
    # The host link: its propagation delay and each frame's serialisation at the wire
    # rate (a veth has neither; virtual time's MemLink both).
    wire_bps = (cfg.nic.line_rate_bps / cfg.nic.time_dilation if cfg.nic.line_rate_bps
                else None)
    if cfg.nic.host_link_delay_ns or wire_bps:
        port = DelayedPort(clock, port, cfg.nic.host_link_delay_ns, wire_bps,
                           WIRE_OVERHEAD_BYTES)
    agent = Agent(cfg, clock, port, pfc=host_pfc)
    stopped = False
    start_error: str | None = None

    def on_signal(signum: int, _frame: object) -> None:
        nonlocal stopped
        stopped = True
        clock.stop()

    def start_failed(why: str) -> None:
        nonlocal stopped, start_error
        start_error = why
        stopped = True
        clock.stop()

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        status("ready")
        print("READY", flush=True)
        if start_on_stdin:
            _start_from_stdin(agent, clock, start_failed)
        else:
            agent.start()
        last_report = _progress_reports(agent, clock, progress_s)
        # `stopped` is polled too: RealClock.run() clears an earlier stop() request, and a
        # signal may land between READY and run().
        clock.run(until=lambda: stopped or agent.done(), timeout_s=cfg.timeout_s)
        last_report()  # the last counters, and the failures that ended the agent
        if agent.done() and not stopped and linger_s > 0:
            # Keep answering for a moment: a peer may still need our last ACK.
            clock.run(until=lambda: stopped, timeout_s=linger_s)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        ok = agent.ok()
        deliver_results(agent.results(), results)
        port.close()
        clock.close()
        if start_error is None:
            status("done" if ok else "partial")
            print("DONE" if ok else "PARTIAL", flush=True)
    if start_error is not None:
        print(f"error: {start_error}", file=sys.stderr)
        status("error")
        return 1
    return 0 if ok else 2
