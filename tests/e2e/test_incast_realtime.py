"""The same 2:1 incast in real time on Mininet and in virtual time agree (#13, dilation
invariance): at two dilations the real-time run's utilisation and fairness are within 10%
of the virtual-time run's. Both go through the same run plan; only the clock
and the links differ (Mininet veths and switch daemons against in-memory links)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from emu.experiments.incast import IncastSpec, jain, plan_incast
from emu.experiments.plan import plan_run
from emu.experiments.summary import RunSummary

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900),
              pytest.mark.usefixtures("e2e_ready", "no_leftovers")]


class _Quiet:
    def print(self, *_a: Any, **_k: Any) -> None:
        pass


def figures(s: RunSummary, link_bps: float) -> dict[str, float]:
    """Utilisation of the bottleneck over the transfer, Jain fairness of the flows'
    goodputs and the CNPs the senders received, all in modelled units."""
    flows = [f for f in s.flows if f.start_s is not None and f.end_s is not None]
    assert len(flows) == 2 and all(f.verified for f in flows)
    start = min(f.start_s for f in flows if f.start_s is not None)
    end = max(f.end_s for f in flows if f.end_s is not None)
    dilation = float(s.run["dilation"])
    nominal_s = (end - start) / dilation
    total = sum(f.size_bytes for f in flows)
    return {"utilisation": total * 8 / nominal_s / link_bps,
            "jain": jain([f.goodput_nominal_bps or 0.0 for f in flows]),
            "cnps": float(s.hosts.cnps_rcvd)}


@pytest.mark.parametrize("dilation", [5000.0, 10000.0])
def test_realtime_incast_agrees_with_virtual_time(tmp_path: Path, dilation: float) -> None:
    from emu.experiments.run import run_experiment
    from emu.experiments.virtual import run_virtual

    # 25 Gb/s modelled at 5 and 2.5 Mb/s on the wire: ~150 frames/s per port, far below
    # what the daemons sustain, so the real-time run is network-bound.
    spec = IncastSpec(senders=2, flow_bytes=8_000_000, profile="hpcc",
                      link_rate_bps=25_000_000_000, mtu_bytes=4096, dilation=dilation)
    virt_plan, _rec = plan_incast(spec)
    # On a shared machine another run may hold the run lock for a while: wait for it.
    cfg = dataclasses.replace(virt_plan.config, results_root=tmp_path, start_delay_s=0.3,
                              timeout_s=300.0, lock_wait_s=600.0)
    virtual = run_virtual(plan_run(cfg, virt_plan.model), write=False)
    real_cfg = dataclasses.replace(cfg, virtual=False)
    real = run_experiment(real_cfg, plan=plan_run(real_cfg, virt_plan.model), console=_Quiet())
    assert virtual.ok and real.ok
    v, r = figures(virtual, spec.link_rate_bps), figures(real, spec.link_rate_bps)
    print(f"dilation {dilation:g}: virtual {v}, real time {r}")
    assert not real.fidelity.cpu_bound, real.fidelity.reasons
    for key in ("utilisation", "jain"):
        assert abs(r[key] - v[key]) <= 0.10 * v[key], (key, r, v)
    # CNP counts are not asserted (the 10% on CNPs is open). Here hpcc sends one
    # per marked packet and the count is the size of ~4 episodes of ~50 CNPs, set by the
    # switch's random marking draws: virtual time alone gives 126 to 193 over eight
    # seeds, and real time (which consumes the draws in another order) 151 and 207
    # against 182 and 176. Deterministic marking (a step at 25 frames) removes the
    # draws, but real time still marks fewer packets than virtual time in every profile
    # tried (hpcc 248, 271 against 300; paper 44, 45 against 48 and 62, 70 against 75
    # with 16 and 24 MB; nvidia 1116, 1164 against 1256), for a cause not found yet.
    assert r["cnps"] > 0 and v["cnps"] > 0
