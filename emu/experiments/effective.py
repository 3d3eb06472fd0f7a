"""The values a run actually applied, modelled and on the wire, for its results folder.

A profile's name is not enough to reproduce or judge a run: the record gives every
DCQCN parameter as modelled (nominal) and as the NICs apply it on the wire (rates / D,
durations x D), which durations were raised to the timer floor and why, the ECN marking
band and queue depths in packets and bytes, the dilation, the seed, and the project
version (`git describe`).
"""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

from emu.roce.config import AgentConfig

from .agent_configs import FRAME_OVERHEAD_BYTES
from .jsontypes import JsonDict
from .plan import RunPlan

REPO = Path(__file__).resolve().parents[2]


def project_version() -> str:
    """`git describe --always --dirty` of the checkout, else the package version."""
    try:
        out = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty",
                              "--tags"], capture_output=True, text=True, timeout=10)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"emu {version('emu')}"
    except PackageNotFoundError:
        return "unknown"


def _dcqcn(cfg: AgentConfig, profile: str) -> JsonDict:
    from emu.roce.dcqcn import scaled
    from emu.roce.pacing import Dilation as HostDilation

    n = cfg.nic
    host = HostDilation(n.time_dilation, n.timer_resolution_ns, n.line_rate_bps,
                         n.mtu + FRAME_OVERHEAD_BYTES)  # as emu.roce.nic.Nic sets it
    floor = host.floor_ns()
    wire, clamped = scaled(cfg.dcqcn, host, floor)
    why = (f"a wire duration below {floor} ns (max of the timer resolution "
           f"{n.timer_resolution_ns} ns and one {n.mtu}-byte frame at the wire line rate) "
           "cannot act as designed, so it is raised to that floor") if clamped else ""
    return {"profile": profile, "enabled": cfg.dcqcn.enabled,
            "modelled": dataclasses.asdict(cfg.dcqcn), "wire": dataclasses.asdict(wire),
            "clamped": clamped, "clamp_reason": why, "timer_floor_ns": floor}


def effective_values(plan: RunPlan) -> JsonDict:
    cfg = plan.config
    d = plan.dilation
    frame = cfg.mtu_bytes + FRAME_OVERHEAD_BYTES
    lb = plan.lb_settings()
    depths = sorted({p.depth_pkts for s in plan.fabric.switches for p in s.ports})
    hosts = sorted(plan.agents)
    out: JsonDict = {
        "version": project_version(),
        "seed": cfg.workload.seed,
        "dilation": d.factor,
        "budget_s_wire": plan.budget_s,
        "links": [{"link": str(lm), "modelled_rate_bps": lm.rate_bps,
                   "wire_rate_bps": lw.rate_bps, "modelled_delay_ns": lm.delay_ns,
                   "wire_delay_ns": lw.delay_ns, "depth_pkts": lw.depth_pkts}
                  for lm, lw in zip(plan.model.links, plan.fabric.links, strict=True)],
        "ecn": {"kmin_pkts": cfg.ecn_kmin_pkts, "kmax_pkts": cfg.ecn_kmax_pkts,
                "pmax": cfg.ecn_pmax, "kmin_bytes": cfg.ecn_kmin_pkts * frame,
                "kmax_bytes": cfg.ecn_kmax_pkts * frame, "frame_bytes": frame},
        "queues": {"depth_pkts": depths, "depth_bytes": [x * frame for x in depths],
                   "priority_queues": cfg.priority_queues},
        "lb": {"mode": cfg.lb.value, "flowlet_timeout_us_modelled": cfg.flowlet_timeout_us,
               "qdepth_max_age_us_modelled": cfg.qdepth_max_age_us,
               "flowlet_timeout_us_wire": lb.flowlet_timeout_us,
               "qdepth_max_age_us_wire": lb.qdepth_max_age_us},
    }
    if hosts:
        out["dcqcn"] = _dcqcn(plan.agents[hosts[0]], cfg.dcqcn_profile)
        out["windows_pkts"] = sorted({q.max_outstanding_pkts for a in plan.agents.values()
                                      for q in a.qps})
        out["rto_wire_ns"] = sorted({int(q.rto_ns * d.factor) for a in plan.agents.values()
                                     for q in a.qps})
        out["rto_us_modelled"] = sorted({q.rto_ns / 1e3 for a in plan.agents.values()
                                         for q in a.qps})
        out["rto_backoff"] = cfg.ack_timeout is None
        out["ack_timeout"] = cfg.ack_timeout
        out["retry_cnt"] = cfg.retry_cnt
    return out
