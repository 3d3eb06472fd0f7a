"""`emu run --virtual`: the same workload, agents and fabric.p4 in one process on a
virtual clock (emu.sim.SimFabric): deterministic, no root, no CPU-bound artefacts.

The host agents are `emu.roce.agent.Agent`s on the SimFabric host ports, so their
result lines, and everything built from them, are those of a Mininet run.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from emu.control.params import LbMode
from emu.core.signals import interrupt_name, stop_requests, unwinding_on_termination

from . import pfc
from .config import RunConfigError
from .failures import share_failures
from .jsontypes import JsonDict
from .plan import RunPlan
from .report import RunRecords, build_summary, write_and_show
from .results import discard_unused_run_dir, make_run_dir
from .sampler import ChangeSampler, FabricSampler, Snapshot
from .summary import RunSummary

if TYPE_CHECKING:
    from rich.console import Console

    from emu.roce.agent import Agent
    from emu.sim.fabric import SimFabric


def _agents(plan: RunPlan, sim: SimFabric, flow: pfc.VirtualPfc) -> dict[str, Agent]:
    """The host agents on the SimFabric host ports (behind a PFC MAC with flow control)."""
    from emu.roce.agent import Agent

    return {h: Agent(c, sim.clock, sim.port(h, 0), pfc=flow.host_params(h))
            for h, c in plan.agents.items()}


def _check_open_files(plan: RunPlan) -> None:
    """Refuse, before anything runs, captures this process cannot hold open: two files a
    switch port for the whole run (without room, the run lost captures, then failed to
    import a module halfway)."""
    from emu.core.fdlimit import HEADROOM, ensure_open_files

    ports = sum(len(s.ports) for s in plan.fabric.switches)
    allowed = ensure_open_files(2 * ports + HEADROOM)
    if allowed < 2 * ports + HEADROOM:
        raise RunConfigError(
            f"pcap: capturing {ports} switch ports holds {2 * ports} files open beside "
            f"about {HEADROOM} of the run's own, and this process may open {allowed} "
            "(its hard limit, ulimit -Hn): raise the limit or run without --pcap")


class _Fabric:
    """The SimFabric of one run with its agents and samplers, set up before the workload."""

    def __init__(self, plan: RunPlan, run_dir: Path | None) -> None:
        from emu.sim.fabric import SimFabric

        cfg = plan.config
        self.plan = plan
        if run_dir is not None and cfg.pcap:
            _check_open_files(plan)
        # Virtual time between sample ticks (samples kept where something changed).
        self.tick_ns = max(1, round(cfg.sample_interval() * 1e9))
        self.sim = sim = SimFabric(
            plan.fabric, lb=plan.lb_settings(),
            pcap_dir=run_dir / "pcap" if run_dir is not None and cfg.pcap else None,
            ecn=plan.ecn_settings(), qos=pfc.qos(cfg), flow_control=pfc.flow_control(plan),
            seed=cfg.workload.seed, model=plan.model, pcap_dilation=plan.dilation.factor,
            link_jitter_ns=round(plan.dilation.wire_ns(cfg.link_jitter_ns)))
        if cfg.lb is LbMode.TE:
            plan.pin_te(sim.controller)
        self.clock = sim.clock
        self.flow = pfc.VirtualPfc(sim)  # with flow control: host MACs, switch counters
        self.agents = _agents(plan, sim, self.flow)
        self.sampler = FabricSampler([s.name for s in plan.fabric.switches], self.tm_stats,
                                     sim.controller, t0=0.0,
                                     clock=lambda: self.clock.now_ns() / 1e9)
        self.first = self.sample(True)
        self.changes = ChangeSampler(
            {(s.name, p.number): (sim.port(s.name, p.number).stats,
                                  sim.switches[s.name].sw.tm, sim.switches[s.name].drops)
             for s in plan.fabric.switches for p in s.ports}, self.sampler, self.tick_ns)
        self.changes.start(self.first)

    def tm_stats(self, switch: str) -> JsonDict:
        """One switch's counters and queue occupancy, shaped as the admin `stats` answer."""
        sw = self.sim.switches[switch]
        ports: JsonDict = {}
        for p in self.plan.fabric.switch(switch).ports:
            fp = self.sim.port(switch, p.number)
            pk, _by = sw.sw.tm.occupancy(p.number)
            ports[str(p.number)] = {"rx_frames": fp.stats.rx_frames,
                                    "rx_bytes": fp.stats.rx_bytes,
                                    "tx_frames": fp.stats.tx_frames,
                                    "tx_bytes": fp.stats.tx_bytes, "kernel_drops": 0,
                                    # frames the port could not put on its link (down)
                                    "tx_drops": fp.stats.tx_drops,
                                    "queue": {"queued_pkts": pk}}
        drops: dict[str, dict[str, int]] = {}
        for (port, reason), n in sw.drops.snapshot().items():
            drops.setdefault(str(port), {})[reason] = n
        return {"ports": ports, "drops": drops}

    def sample(self, with_p4: bool) -> Snapshot:
        snap = self.sampler.sample(with_p4)
        now = self.clock.now_ns() / 1e9
        snap.t_s = now
        snap.queues = [(now, sw, p, d) for _t, sw, p, d in snap.queues]
        return snap


def _fail_link(sim: SimFabric, link: tuple[str, str], t_s: float, notes: list[str],
               events: list[tuple[float, str]]) -> None:
    """--fail-link: take the link down now; the controller reroutes at once."""
    sim.link_down(*link)
    notes.append(f"link {link[0]}-{link[1]} failed at {t_s:.6f} s (virtual)")
    events.append((t_s, f"link_down {link[0]} {link[1]}"))
    events.append((t_s, "rerouted"))


def _finished(plan: RunPlan, agents: Mapping[str, Agent]) -> bool:
    share_failures(plan.workload, agents)
    return all(a.done() for a in agents.values())


def run_virtual(plan: RunPlan, *, console: Console | None = None, write: bool = True
                ) -> RunSummary:
    cfg = plan.config
    t_wall = time.monotonic()
    run_dir = make_run_dir(Path(cfg.results_root), cfg.topo, cfg.lb, cfg.cc) if write else None
    try:
        with unwinding_on_termination():  # SIGTERM too: no empty results folder left
            fab = _Fabric(plan, run_dir)
    except BaseException:  # Ctrl-C or an error before the workload: nothing measured
        if run_dir is not None:
            discard_unused_run_dir(run_dir, ("pcap",))
        raise
    sim, clock, flow, agents, changes = fab.sim, fab.clock, fab.flow, fab.agents, fab.changes
    first, sample, tick_ns = fab.first, fab.sample, fab.tick_ns
    for a in agents.values():
        a.start()
    limit = int(plan.budget_s * 1e9)  # the workload's budget, in virtual time
    # The failure and the budget's end fall where they are asked for, not on the next
    # tick (a tick is a sample interval, 5 ms by default). The failure counts from the
    # workload's start, after the start delay: counted from time 0, the default delay
    # (0.3 s) put a 0.1 s failure before the first packet.
    failure = (None if cfg.fail_link is None else
               (cfg.fail_link, max(0, round((plan.start_delay_s + cfg.fail_after_s) * 1e9))))
    notes: list[str] = []
    events: list[tuple[float, str]] = []
    tick = 0
    # Ctrl-C / SIGTERM end the run between two ticks, never inside one (a packet half
    # way through a switch); a second one cuts in at once.
    with stop_requests() as stop:
        try:
            while (not stop.requested and not _finished(plan, agents)
                   and clock.now_ns() < limit):
                # Nothing changes before the next timer: go to the tick that holds it (the
                # ticks skipped would have read exactly what the last one did).
                nxt = clock.next_deadline()
                target = tick + 1 if nxt is None else max(tick + 1, -(-nxt // tick_ns))
                if failure is not None:
                    target = min(target, max(tick + 1, -(-failure[1] // tick_ns)))
                tick = min(target, -(-limit // tick_ns))
                end_ns = min(tick * tick_ns, limit)
                if failure is not None and failure[1] <= end_ns:
                    clock.advance_to(max(failure[1], clock.now_ns()))
                    _fail_link(sim, failure[0], clock.now_ns() / 1e9, notes, events)
                    failure = None
                clock.advance_to(end_ns)
                if end_ns < tick * tick_ns:
                    changes.end_ns = end_ns
                changes.tick(tick)
                flow.sample()
        except KeyboardInterrupt as exc:  # the second signal
            how = interrupt_name(exc)
        else:
            how = stop.describe()
    # Interrupted: the run so far is still a result (partial), written like any other.
    interrupted = bool(how)
    if interrupted:
        notes.append(f"interrupted ({how}) at {clock.now_ns() / 1e9:.3f} s (virtual): "
                     "partial results")
    if not interrupted and not all(a.done() for a in agents.values()):
        notes.append(f"agents still running after {plan.budget_s:g} s (virtual): stopped "
                     "(--timeout)")
    snaps = [first, *changes.finish(tick)]
    duration = clock.now_ns() / 1e9
    clock.advance(50_000_000)  # the last ACKs
    snaps.append(sample(True))
    flow.sample()
    notes.extend(sim.close_pcaps())
    rows = {h: a.results() for h, a in agents.items()}
    rec = RunRecords(rows, {h: 0.0 for h in agents}, snaps, duration,
                     bringup_s={"wall_s": time.monotonic() - t_wall}, notes=notes, events=events,
                     interrupted=interrupted, pfc_series=flow.series)
    summary = build_summary(plan, rec, run_dir)
    if run_dir is not None:
        write_and_show(run_dir, plan, rec, summary, console)
    return summary
