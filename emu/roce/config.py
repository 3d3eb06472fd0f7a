"""Agent configuration: typed dataclasses loaded from YAML or JSON with clear errors.

Example (YAML):

    host: {name: h1, ip: 10.0.1.1, mac: "02:00:00:00:01:01"}
    nic: {line_rate_bps: 100e9, time_dilation: 5000, mtu: 1024, dscp: 26, ack_class: qp}
    dcqcn: {profile: nvidia, enabled: true, g: 0.00390625}   # any DcqcnParams field
    plb: {enabled: true, congested_rounds: 12, idle_congested_rounds: 3}
    qps:
      - {qpn: 17, peer: h2, peer_ip: 10.0.2.1, peer_mac: "02:00:00:00:02:01",
         peer_qpn: 33, start_psn: 0, peer_start_psn: 0, udp_sport: 49500, recovery: sr}
    flows:
      - {id: f1, peer: h2, size_bytes: 4000000, op: send, start_us: 0, after: []}
    expect: [f2]        # flow ids this host receives (it finishes when they are in)

Nominal units throughout (the emulated fabric); `nic.time_dilation` maps them to the wire.

`AgentConfig` is the one typed configuration of a host: `emu run` builds it from the run
plan, hands it to the agent process as JSON (`to_dict`) and the agent loads it back into
the same type (`AgentConfig.from_dict`, the loader below, which also checks hand-written
files). The NIC's and QPs' own parameter types are derived from it in one place
(`nic_params`, `qp_params`).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from emu.core.units import MAX_DILATION, MAX_LINE_RATE_BPS, MAX_TIME_NS
from emu.core.wire import DSCP_CNP, DSCP_ROCE_DATA, MAX_MESSAGE_BYTES
from emu.roce import wire
from emu.roce.dcqcn import DEFAULT_PROFILE, PROFILES, DcqcnParams, profile
from emu.roce.nic import NicParams
from emu.roce.plb import PlbParams
from emu.roce.qp import QpParams
from emu.roce.verbs import QpTransport
from emu.roce.wire import AckClass

# Packets a QP may have in flight: a quarter of the 24-bit PSN space, so that a PSN
# compared modulo 2^24 always tells an old packet from a new one.
MAX_OUTSTANDING_PKTS = (1 << 22) - 1


class ConfigError(ValueError):
    """Bad configuration; the message names the offending key."""


@dataclass
class HostConfig:
    name: str
    ip: str
    mac: str


@dataclass
class NicConfig:
    line_rate_bps: float | None = 100e9
    time_dilation: float = 1.0
    timer_resolution_ns: int = 0
    mtu: int = 1024
    dscp: int = DSCP_ROCE_DATA
    ctrl_dscp: int = DSCP_CNP  # CNPs; ACK/NAKs too with ack_class "cnp"
    # "qp": ACK/NAKs in the QP's own class (dscp, not ECT), as RC NICs send them;
    # "cnp": in the CNP class (ctrl_dscp), the strict-priority feedback queue.
    ack_class: AckClass = "qp"
    ttl: int = 64
    tx_batch: int = 64
    pacing_burst_ns: int = 500_000  # catch-up after late real-clock wakeups (wire time)
    min_rto_ns: int = 2_000_000
    # The host link's propagation delay (clock time) that the agent process itself adds
    # to what it sends: in Mininet runs the switch daemon delays only its own egress, so
    # without it the host -> switch direction would have none. In-memory links (virtual
    # time) carry the delay both ways and ignore this.
    host_link_delay_ns: int = 0


@dataclass
class QpConfig(QpTransport):
    """One QP as a host's configuration names it: its peer, and the transport settings."""

    qpn: int
    peer_ip: str
    peer_mac: str
    peer_qpn: int
    peer: str = ""
    udp_sport: int = 49152


@dataclass
class FlowConfig:
    id: str
    size_bytes: int
    qpn: int = 0  # the local QP that sends it; or give `peer` (a QP's peer name)
    peer: str = ""
    op: Literal["send", "write"] = "send"
    start_us: float = 0.0  # clock time after the agent is ready (not dilated)
    after: list[str] = field(default_factory=list)  # completed (sent) or received flows
    va: int = 0
    rkey: int = 0


@dataclass
class AgentConfig:
    host: HostConfig
    qps: list[QpConfig]
    nic: NicConfig = field(default_factory=NicConfig)
    dcqcn: DcqcnParams = field(default_factory=DcqcnParams)
    plb: PlbParams = field(default_factory=PlbParams)
    flows: list[FlowConfig] = field(default_factory=list)
    expect: list[str] = field(default_factory=list)
    rate_samples_max: int = 200
    timeout_s: float | None = None  # give up (partial results) after this long

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able data that `from_dict` turns back into an equal config."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> AgentConfig:
        """Load and validate a mapping (hand-written YAML/JSON or `to_dict` output)."""
        return load_dict(data)

    def nic_params(self) -> NicParams:
        """The NIC's own settings (what a bare `Nic` takes) from this host's config."""
        n = self.nic
        return NicParams(mac=self.host.mac, ip=self.host.ip, line_rate_bps=n.line_rate_bps,
                         dilation=n.time_dilation, timer_resolution_ns=n.timer_resolution_ns,
                         mtu=n.mtu, dcqcn=self.dcqcn, plb=self.plb, tx_batch=n.tx_batch,
                         pacing_burst_ns=n.pacing_burst_ns, min_rto_ns=n.min_rto_ns)

    def qp_params(self, q: QpConfig) -> QpParams:
        """One QP's parameters (a fresh object: the NIC converts its times in place)."""
        n = self.nic
        path = wire.Path(self.host.mac, q.peer_mac, self.host.ip, q.peer_ip, q.udp_sport,
                         q.peer_qpn, dscp=n.dscp, ctrl_dscp=n.ctrl_dscp, ttl=n.ttl,
                         ack_class=n.ack_class)
        return QpParams(q.qpn, path, mtu=n.mtu, deliver="digest", **q.transport())


def _check(cond: bool, where: str, msg: str) -> None:
    if not cond:
        raise ConfigError(f"{where}: {msg}")


def _convert(tp: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for a in args:
            if a is type(None):
                continue
            try:
                return _convert(a, value, where)
            except ConfigError as exc:
                errors.append(str(exc))
        raise ConfigError(errors[0] if errors else f"{where}: bad value {value!r}")
    if origin is Literal:
        _check(value in args, where, f"must be one of {', '.join(map(repr, args))}, got {value!r}")
        return value
    if origin is list:
        _check(isinstance(value, list), where, f"expected a list, got {type(value).__name__}")
        return [_convert(args[0], v, f"{where}[{i}]") for i, v in enumerate(value)]
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return from_dict(tp, value, where)
    if tp is bool:
        _check(isinstance(value, bool), where, f"expected true/false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        _check(isinstance(value, int) and not isinstance(value, bool), where,
               f"expected an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, str):
            try:
                value = float(value)  # YAML reads 100e9 as a string
            except ValueError:
                pass
        _check(isinstance(value, (int, float)) and not isinstance(value, bool), where,
               f"expected a number, got {value!r}")
        _check(math.isfinite(value), where, f"expected a finite number, got {value!r}")
        return float(value)
    if tp is str:
        _check(isinstance(value, str), where, f"expected a string, got {value!r}")
        return value
    raise ConfigError(f"{where}: unsupported type {tp!r}")


# A class's hints, evaluated once: a plan validates a config per host (and these are
# strings, under `from __future__ import annotations`, compiled at every evaluation).
_type_hints = functools.cache(typing.get_type_hints)


def from_dict(cls: type, data: Any, where: str = "config") -> Any:
    """Build dataclass `cls` from a mapping, rejecting unknown keys and bad types."""
    _check(isinstance(data, dict), where, f"expected a mapping, got {type(data).__name__}")
    hints = _type_hints(cls)
    flds = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(flds))
    _check(not unknown, where, f"unknown key(s) {', '.join(unknown)}; known: {', '.join(flds)}")
    kwargs = {}
    for name, f in flds.items():
        if name in data:
            kwargs[name] = _convert(hints[name], data[name], f"{where}.{name}")
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ConfigError(f"{where}: missing required key {name!r}")
    return cls(**kwargs)


def dcqcn_params(name: str, line_rate: float | None,
                 overrides: dict[str, Any] | None = None) -> DcqcnParams:
    """Profile `name` at the (nominal) line rate, with `overrides` (DcqcnParams fields)."""
    _check(name in PROFILES, "dcqcn.profile", f"must be one of {', '.join(PROFILES)}")
    try:
        base = profile(name, line_rate or 100e9)
    except ValueError as exc:  # a line rate the profile's switch model cannot scale to
        raise ConfigError(f"dcqcn.profile: {exc}") from None
    merged = {**dataclasses.asdict(base), **(overrides or {})}
    params: DcqcnParams = from_dict(DcqcnParams, merged, "dcqcn")
    try:
        params.validate()
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    _check_times(params, "dcqcn")
    return params


def _check_line_rate(bps: float | None) -> None:
    _check(bps is None or 0 < bps <= MAX_LINE_RATE_BPS, "nic.line_rate_bps",
           f"must be positive and at most {MAX_LINE_RATE_BPS:g} bit/s, got {bps!r}")


def _check_times(obj: object, where: str) -> None:
    """Every `*_ns` field of a config dataclass within 0..MAX_TIME_NS."""
    for f in dataclasses.fields(obj):  # type: ignore[arg-type]
        v = getattr(obj, f.name)
        if f.name.endswith("_ns") and isinstance(v, (int, float)):
            _check(0 <= v <= MAX_TIME_NS, f"{where}.{f.name}",
                   f"must be 0..{MAX_TIME_NS} ns, got {v!r}")


def _dcqcn(data: Any, line_rate: float | None) -> DcqcnParams:
    if data is None:
        data = {}
    _check(isinstance(data, dict), "dcqcn", "expected a mapping")
    data = dict(data)
    return dcqcn_params(data.pop("profile", DEFAULT_PROFILE), line_rate, data)


def load_dict(data: Any) -> AgentConfig:
    _check(isinstance(data, dict), "config", "expected a mapping at the top level")
    data = dict(data)
    nic = from_dict(NicConfig, data.get("nic", {}), "nic")
    _check_line_rate(nic.line_rate_bps)  # the DCQCN profile is scaled to it
    dcqcn = _dcqcn(data.pop("dcqcn", None), nic.line_rate_bps)
    cfg: AgentConfig = from_dict(AgentConfig, data)
    cfg.dcqcn = dcqcn
    validate(cfg)
    return cfg


def load(path: str | Path) -> AgentConfig:
    p = Path(path)
    text = p.read_text()
    try:
        if p.suffix == ".json":
            data = json.loads(text)
        else:
            import yaml

            data = yaml.safe_load(text)
    except Exception as exc:  # yaml.YAMLError or json.JSONDecodeError
        raise ConfigError(f"{p}: cannot parse: {exc}") from None
    return load_dict(data)


def _check_address(ip: str, mac: str, where: str) -> None:
    """The IPv4 and MAC addresses as the wire encodes them (a bad one failed later, in
    the agent, when its first QP was built)."""
    try:
        wire.ip_bytes(ip)
    except ValueError:
        raise ConfigError(f"{where}: {ip!r} is not an IPv4 address") from None
    try:
        wire.mac_bytes(mac)
    except ValueError:
        raise ConfigError(f"{where}: {mac!r} is not a MAC address (aa:bb:cc:dd:ee:ff)") from None


def validate(cfg: AgentConfig) -> None:
    n = cfg.nic
    _check(256 <= n.mtu <= 4096, "nic.mtu", f"must be in 256..4096 bytes, got {n.mtu}")
    _check(0 < n.time_dilation <= MAX_DILATION, "nic.time_dilation",
           f"must be in (0, {MAX_DILATION:g}]")
    _check(1 <= n.ttl <= 255, "nic.ttl", f"must be 1..255, got {n.ttl}")
    _check_times(n, "nic")
    _check_address(cfg.host.ip, cfg.host.mac, "host")
    _check_line_rate(n.line_rate_bps)
    _check(n.line_rate_bps is None or n.line_rate_bps / n.time_dilation <= MAX_LINE_RATE_BPS,
           "nic.time_dilation", f"puts the line rate at {(n.line_rate_bps or 0) / n.time_dilation:g}"
           f" bit/s on the wire; at most {MAX_LINE_RATE_BPS:g}")
    _check(0 <= n.dscp < 64 and 0 <= n.ctrl_dscp < 64, "nic.dscp", "DSCP must be 0..63")
    try:
        cfg.plb.validate()
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    qpns = set()
    for i, q in enumerate(cfg.qps):
        w = f"qps[{i}]"
        _check(0 < q.qpn < 1 << 24 and 0 < q.peer_qpn < 1 << 24, w, "QPNs must be 1..2^24-1")
        _check(q.qpn not in qpns, w, f"duplicate qpn {q.qpn}")
        qpns.add(q.qpn)
        _check(0 <= q.start_psn < 1 << 24 and 0 <= q.peer_start_psn < 1 << 24, w,
               "PSNs must be 0..2^24-1")
        _check(0 < q.udp_sport < 65536, w, "udp_sport must be 1..65535")
        _check_address(q.peer_ip, q.peer_mac, w)
        _check_times(q, w)
        _check(q.max_outstanding_pkts >= 1 and q.ack_every_pkts >= 1, w,
               "max_outstanding_pkts and ack_every_pkts must be >= 1")
        _check(q.retry_cnt is None or 0 <= q.retry_cnt <= 7, f"{w}.retry_cnt",
               f"must be 0..7 (IBTA's 3 bits) or null (retry forever), got {q.retry_cnt!r}")
        _check(q.max_outstanding_pkts <= MAX_OUTSTANDING_PKTS, w,
               f"max_outstanding_pkts must be at most {MAX_OUTSTANDING_PKTS} (< 2^22)")
        if q.recovery == "sr":
            _check(q.max_outstanding_pkts <= q.reorder_window_pkts, w,
                   "with selective repeat, max_outstanding_pkts must not exceed "
                   "reorder_window_pkts (the peer's buffer)")
    ids = set()
    for i, f in enumerate(cfg.flows):
        w = f"flows[{i}]"
        if f.qpn == 0:
            _check(bool(f.peer), w, "give the sending QP as qpn or peer")
            match = [q.qpn for q in cfg.qps if q.peer == f.peer]
            _check(len(match) == 1, f"{w}.peer",
                   f"{f.peer!r} must name exactly one QP's peer (found {len(match)})")
            f.qpn = match[0]
        _check(f.id not in ids, w, f"duplicate flow id {f.id!r}")
        ids.add(f.id)
        _check(f.qpn in qpns, w, f"qpn {f.qpn} is not one of the configured QPs")
        _check(0 <= f.size_bytes <= MAX_MESSAGE_BYTES, w,
               f"size_bytes must be 0..{MAX_MESSAGE_BYTES} (an RDMA message is under 2 GiB)")
        _check(f.start_us >= 0, w, "start_us must be >= 0")
    known = ids | set(cfg.expect)
    for i, f in enumerate(cfg.flows):
        for dep in f.after:
            _check(dep in known, f"flows[{i}].after",
                   f"{dep!r} is neither a local flow nor in 'expect'")
            _check(dep != f.id, f"flows[{i}].after", "a flow cannot wait for itself")
    cycle = _waiting_cycle(cfg.flows)
    if cycle is not None:
        first = next(i for i, f in enumerate(cfg.flows) if f.id == cycle[0])
        raise ConfigError(f"flows[{first}].after: these flows wait on each other, so none "
                          f"of them can ever start: {' -> '.join(cycle)}")


def _waiting_cycle(flows: list[FlowConfig]) -> list[str] | None:
    """A cycle of local flows each waiting on the next (a -> b: a is after b), the first
    one repeated at the end; None if there is none. The agent would wait out its budget."""
    after = {f.id: f.after for f in flows}
    state: dict[str, bool] = {}  # False: on the path being followed; True: done
    for root in after:
        if root in state:
            continue
        state[root] = False
        path, todo = [root], [iter(after[root])]
        while todo:
            dep = next(todo[-1], None)
            if dep is None:
                state[path.pop()] = True
                todo.pop()
            elif dep in after and dep not in state:
                state[dep] = False
                path.append(dep)
                todo.append(iter(after[dep]))
            elif state.get(dep) is False:
                return path[path.index(dep):] + [dep]
    return None
