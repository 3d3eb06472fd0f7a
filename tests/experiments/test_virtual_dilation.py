"""A virtual run gives the same modelled results at every dilation, lossy ones included.

Virtual time honours every timer exactly, so a run's modelled times must not depend on
D. The retransmission timeout broke that: it had a floor of 100 ms of wire time (meant
for late real-clock timers), 1 ms modelled at D = 100 and 20 us at D = 5000, so an
incast that overflows a buffer waited out a different timeout at each D (its slowest
flow 0.14 ms modelled at D = 5000, 2 ms at D = 100).
"""

from __future__ import annotations

from typing import Any

import pytest

from emu.experiments.config import RunConfig
from emu.experiments.plan import plan_run
from emu.experiments.virtual import run_virtual
from emu.experiments.workloads import WorkloadParams

CASES: dict[str, dict[str, Any]] = {
    "tail-dropping incast, go-back-N": dict(
        cc="none", workload=WorkloadParams("incast", message_bytes=128 * 1024)),
    "tail-dropping incast, selective repeat, leafspine2": dict(
        topo="leafspine2", cc="none", recovery="sr",
        workload=WorkloadParams("incast", message_bytes=64 * 1024)),
}


def modelled(dilation: float | None, **kw: Any) -> tuple[list[tuple[Any, ...]], int]:
    kw.setdefault("topo", "clos4")
    cfg = RunConfig(virtual=True, progress=False, start_delay_s=0.0, dilation=dilation, **kw)
    plan = plan_run(cfg)
    s = run_virtual(plan, write=False)
    assert s.ok
    d = plan.dilation.factor
    t0 = min(f.start_s for f in s.flows if f.start_s is not None)
    flows = sorted((f.id, None if f.end_s is None else round((f.end_s - t0) / d * 1e9),
                    f.retx_pkts, f.timeouts) for f in s.flows)
    return flows, s.fabric.drops


@pytest.mark.parametrize("case", list(CASES))
def test_a_lossy_virtual_run_is_the_same_at_every_dilation(case: str) -> None:
    default, drops = modelled(None, **CASES[case])
    assert drops > 0 and any(f[3] for f in default)  # the case does wait out timeouts
    for d in (100.0, 1000.0):
        other, other_drops = modelled(d, **CASES[case])
        assert other_drops == drops, d
        # modelled completion times to 1 ns (wire times round to whole wire ns)
        assert [f[:1] + f[2:] for f in other] == [f[:1] + f[2:] for f in default], d
        assert all(abs(a[1] - b[1]) <= 1 for a, b in zip(other, default, strict=True)), \
            (d, other, default)
