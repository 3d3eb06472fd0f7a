"""Per-host agent configurations from (fabric, workload, cc, recovery, dilation).

Pure: returns plain dicts in the schema of `emu.roce.config` (load them with
`emu.roce.config.load_dict` to validate). One reliable-connected QP per host pair that
exchanges any flow, numbered from the peer's index so both ends agree without
negotiation; each ordered pair gets its own UDP source port (ECMP entropy).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any, Literal

from emu.topo import Fabric

from .workloads import Workload

QPN_BASE = 0x100
SPORT_MIN = 49152


@dataclass(frozen=True)
class AgentSettings:
    """How the host stacks run (nominal units; `dilation` maps them onto the wire)."""

    cc: Literal["dcqcn", "none"] = "dcqcn"
    recovery: Literal["gbn", "sr"] = "gbn"
    dilation: float = 1000.0  # nominal rate = wire rate x dilation (20 Mb/s -> 20 Gb/s)
    dcqcn_profile: str = "hpcc"
    mtu_bytes: int = 1024
    timer_resolution_ns: int = 200_000  # no real-clock timer shorter than the reactor honours
    window_pkts: int = 32  # max outstanding packets per QP (= reorder window with sr)
    rto_wire_ms: float = 100.0  # retransmission timeout in clock time (not dilated)
    start_delay_us: float = 0.0  # flows without dependencies start this long after READY
    timeout_s: float | None = None
    plb: bool = False


def qpn_for(peer_index: int) -> int:
    return QPN_BASE + peer_index


def udp_sport(src: str, dst: str, seed: int = 0) -> int:
    """A stable, well-spread source port per ordered host pair."""
    return SPORT_MIN + zlib.crc32(f"{seed}:{src}->{dst}".encode()) % (65536 - SPORT_MIN)


def agent_configs(fabric: Fabric, workload: Workload, settings: AgentSettings,
                  seed: int = 0) -> dict[str, dict[str, Any]]:
    """Host name -> agent configuration, for every host that sends or receives."""
    hosts = {h.name: h for h in fabric.hosts}
    index = {h.name: i for i, h in enumerate(fabric.hosts)}
    for f in workload.flows:
        for name in (f.src, f.dst):
            if name not in hosts:
                raise ValueError(f"flow {f.id}: no host {name!r} in fabric {fabric.name}")
        if f.src == f.dst:
            raise ValueError(f"flow {f.id}: source and destination are both {f.src}")
    peers: dict[str, set[str]] = {}
    for f in workload.flows:
        peers.setdefault(f.src, set()).add(f.dst)
        peers.setdefault(f.dst, set()).add(f.src)
    configs: dict[str, dict[str, Any]] = {}
    for name in (h.name for h in fabric.hosts):
        if name not in peers:
            continue
        h = hosts[name]
        qps = []
        for peer in sorted(peers[name], key=index.__getitem__):
            p = hosts[peer]
            qps.append({
                "qpn": qpn_for(index[peer]), "peer": peer, "peer_ip": str(p.ip),
                "peer_mac": p.mac, "peer_qpn": qpn_for(index[name]),
                "udp_sport": udp_sport(name, peer, seed), "recovery": settings.recovery,
                "reorder_window_pkts": max(settings.window_pkts, 1),
                "max_outstanding_pkts": max(settings.window_pkts, 1),
                # The QP's RTO is nominal (the NIC multiplies it by the dilation): give
                # the nominal value that lands on rto_wire_ms in clock time.
                "rto_ns": max(1, int(settings.rto_wire_ms * 1e6 / settings.dilation)),
            })
        flows = [{"id": f.id, "qpn": qpn_for(index[f.dst]), "size_bytes": f.size_bytes,
                  "op": "write", "after": list(f.after),
                  "start_us": 0.0 if f.after else settings.start_delay_us}
                 for f in workload.flows if f.src == name]
        link_rate = next(lk.rate_bps for lk in fabric.links if lk.index == h.link)
        cfg: dict[str, Any] = {
            "host": {"name": name, "ip": str(h.ip), "mac": h.mac},
            "nic": {"line_rate_bps": float(link_rate) * settings.dilation,
                    "time_dilation": settings.dilation,
                    "timer_resolution_ns": settings.timer_resolution_ns,
                    "mtu": settings.mtu_bytes,
                    "min_rto_ns": int(settings.rto_wire_ms * 1e6)},
            "dcqcn": {"profile": settings.dcqcn_profile, "enabled": settings.cc == "dcqcn"},
            "plb": {"enabled": settings.plb},
            "qps": qps,
            "flows": flows,
            "expect": [f.id for f in workload.flows if f.dst == name],
        }
        if settings.timeout_s is not None:
            cfg["timeout_s"] = settings.timeout_s
        configs[name] = cfg
    return configs
