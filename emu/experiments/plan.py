"""From a RunConfig to what will run: the fabric, the workload, each agent's config.

Pure (no network, no processes): `emu run --dry-run` prints it and tests check it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from emu.core.credit import MIN_FRAME, NUM_PRIORITIES, CreditSettings, check_buffer
from emu.core.flowmode import FlowControlMode
from emu.core.units import Dilation
from emu.core.wire import WIRE_OVERHEAD_BYTES
from emu.roce.config import AgentConfig, ConfigError
from emu.roce.wire import IB_MTUS, max_ip_bytes
from emu.topo import Fabric, Role, load_topology
from emu.topo.paths import first_hop_ports

from .agent_configs import (
    FRAME_OVERHEAD_BYTES,
    AgentSettings,
    agent_configs,
    base_rtt_s,
    retry_span_wire_s,
    rto_floor_note,
)
from .config import RunConfig, RunConfigError, without_link_delay
from .workloads import Workload, build_workload

if TYPE_CHECKING:  # emu.control (gRPC) is imported only by the runs that program switches
    from emu.control import EcnSettings, FabricController, Flow, LbSettings


BUDGET_MARGIN = 4.0  # default budget: at least this many times the workload's least time
CREDIT = CreditSettings()  # the switches' in credit runs (hosts grant what they can)


@dataclass(frozen=True)
class RunPlan:
    """`model` is the topology as written (the modelled network); `fabric` is the same
    fabric on the wire (`model.on_wire(dilation)`): what switches, links and hosts run."""

    config: RunConfig
    fabric: Fabric
    workload: Workload
    agents: dict[str, AgentConfig]  # host -> its agent's configuration
    model: Fabric
    dilation: Dilation
    # After START, before the first flow (RunConfig.start_delay_s; in a virtual credit
    # run at least the links' credit start-up: effective_start_delay_s).
    start_delay_s: float = 0.0
    budget_s: float = 0.0  # the workload's budget, wire seconds (workload_budget_s)

    @cached_property
    def notes(self) -> list[str]:
        """Warnings for the user: the configuration's; where this plan's wire-time RTO
        floor, not the QPs' own RTO, sets their timeouts; a budget too short to wait
        out a timeout."""
        rto = rto_floor_note(self.fabric, self.agents,
                             agent_settings(self.config, self.dilation, self.start_delay_s,
                                            self.budget_s))
        return [*self.config.notes(), *([rto] if rto else []), *self._budget_note()]

    def _budget_note(self) -> list[str]:
        """A QP that times out waits its RTO, then the next timeout (twice as long, with
        backoff): a budget shorter than that stops a lossy run before it can recover
        (a NIC-like --rto or --ack-timeout of milliseconds)."""
        budget = self.budget_s
        need_s, host = min_wire_s(self.fabric, self.workload, self.config.mtu_bytes)
        if need_s > budget / 2:
            return [f"the workload needs at least {need_s:.3g} s of wire time ({host}'s "
                    f"link carries its bytes at {_host_wire_bps(self.fabric, host):.3g} "
                    f"bit/s, with no other flow in the way) and its budget is {budget:g} s: "
                    f"the run may stop with flows still going; raise --timeout"]
        two = retry_span_wire_s(self.agents, 2)
        if two <= budget:
            return []
        rto_s = retry_span_wire_s(self.agents, 1)
        return [f"the workload's budget ({budget:g} s of wire time) is shorter than two "
                f"retransmission timeouts in a row ({two:.3g} s: the RTO is "
                f"{rto_s / self.dilation.factor * 1e6:.4g} us modelled): a lost packet may "
                f"stop the run; raise --timeout"
                + ("" if self.config.virtual else
                   " or run in virtual time (--virtual), where waiting costs nothing")]

    def ping_timeout_s(self) -> int:
        """How long the reachability check waits for each ping's reply (ping -W, whole
        seconds): twice the longest base round trip between two hosts on the wire, at
        least 2 s. Link delays are dilated: fattree4 at 0.5 Mb/s has 1.2 s of them one
        way across pods, and a fixed 2 s failed half its host pairs."""
        hosts = [h.name for h in self.fabric.hosts]
        rtt = max((base_rtt_s(self.fabric, a, b, self.config.mtu_bytes)
                   for a in hosts for b in hosts if a != b), default=0.0)
        return max(2, math.ceil(2 * rtt))

    def uplinks(self) -> dict[str, list[int]]:
        """Switch -> its up-facing ports (towards a higher layer)."""
        return uplinks(self.fabric)

    def te_flows(self) -> list[Flow]:
        """The workload's QP 5-tuples as TE flows (LB=te pins them), demand = the sender's
        link rate shared by its QPs."""
        from emu.control import Flow

        out: list[Flow] = []
        for host, cfg in self.agents.items():
            qps = [q for q in cfg.qps if any(f.qpn == q.qpn for f in cfg.flows)]
            rate = (cfg.nic.line_rate_bps or 0.0) / cfg.nic.time_dilation
            out.extend(Flow(host, q.peer, sport=q.udp_sport,
                            demand_bps=rate / max(1, len(qps))) for q in qps)
        return out

    def pin_te(self, controller: FabricController) -> None:
        """Pin the workload's flows (LB te) before any of them starts; RunConfigError,
        before any write, if the switches cannot hold the pins or a flow has no path."""
        from emu.control import ControlError

        try:
            controller.place_te(self.te_flows())
        except ControlError as exc:
            raise RunConfigError(f"run configuration: lb te: {exc}") from None

    def lb_settings(self) -> LbSettings:
        """fabric.p4's LB settings with the modelled timers stretched onto the wire."""
        from emu.control import LbSettings

        cfg = self.config

        def wire_us(us: float) -> int:
            return max(1, round(self.dilation.wire_ns(us * 1e3) / 1e3))

        return LbSettings(mode=cfg.lb, seed=cfg.lb_seed,
                          flowlet_timeout_us=wire_us(cfg.flowlet_timeout_us),
                          qdepth_max_age_us=None if cfg.qdepth_max_age_us is None
                          else wire_us(cfg.qdepth_max_age_us))

    def ecn_settings(self) -> EcnSettings:
        """fabric.p4's RED/ECN marking for every port, from the run configuration."""
        from emu.control import EcnSettings

        cfg = self.config
        return EcnSettings(cfg.ecn_kmin_pkts, cfg.ecn_kmax_pkts, cfg.ecn_pmax,
                           mark_at=cfg.ecn_mark_at)

    def port_rates(self) -> dict[tuple[str, int], float]:
        return {(s.name, p.number): float(p.rate_bps) for s in self.fabric.switches
                for p in s.ports}


def uplinks(fabric: Fabric) -> dict[str, list[int]]:
    """Per switch, the up-facing ports its load balancing chooses among: those that
    start a shortest up-down path to some leaf. An uplink on no such path (a detour in
    a custom topology) carries nothing by design; counted, it read as imbalance."""
    chosen: dict[str, set[int]] = {}
    for leaf in fabric.leaves:
        for sw, ports in first_hop_ports(fabric, leaf.name).items():
            chosen.setdefault(sw, set()).update(ports)
    out: dict[str, list[int]] = {}
    for s in fabric.switches:
        if s.role is Role.CORE:
            continue
        ups = {p.number for p in s.fabric_ports if fabric.layer(p.peer.node) > s.role.layer}
        balanced = ups & chosen.get(s.name, set())
        if balanced:
            out[s.name] = sorted(balanced)
    return out


def host_rates(model: Fabric) -> dict[str, float]:
    """Host -> its link's modelled rate."""
    rate = {lk.index: float(lk.rate_bps) for lk in model.links}
    return {h.name: rate[h.link] for h in model.hosts}


def effective_start_delay_s(cfg: RunConfig, fabric: Fabric) -> float:
    """The configured start delay; in a virtual credit run at least the links' start-up:
    a port may send nothing before its peer's first credit update, and each port's
    re-send timer runs once after its own. A real fabric, and a real-time run (its agents
    wait for READY), has its links up long before any traffic; a virtual run that starts
    at once made its first packets wait for credit (clos4 incast: 1.2% longer FCTs)."""
    if not (cfg.virtual and cfg.flow_control is FlowControlMode.CREDIT):
        return cfg.start_delay_s
    updates_bits = (MIN_FRAME + WIRE_OVERHEAD_BYTES) * 8 * NUM_PRIORITIES
    startup_s = max(lk.delay_ns / 1e9 + (updates_bits + CREDIT.refresh_bytes * 8) / lk.rate_bps
                    for lk in fabric.links)
    return max(cfg.start_delay_s, startup_s)


def _host_wire_bps(fabric: Fabric, host: str) -> float:
    return float(fabric.link(fabric.host(host).link).rate_bps)


def min_wire_s(fabric: Fabric, workload: Workload, mtu: int) -> tuple[float, str]:
    """A lower bound of the workload's duration on the wire (`fabric` is the wire's),
    and the host that sets it: the most any host link must carry one way (payload and
    per-packet headers) at its rate."""
    load: dict[tuple[str, str], float] = {}
    for f in workload.flows:
        frames = f.size_bytes + max(1, -(-f.size_bytes // mtu)) * FRAME_OVERHEAD_BYTES
        for key in ((f.src, "tx"), (f.dst, "rx")):
            load[key] = load.get(key, 0.0) + frames * 8
    return max(((bits / _host_wire_bps(fabric, h), h) for (h, _), bits in load.items()),
               default=(0.0, ""))


def workload_budget_s(cfg: RunConfig, fabric: Fabric, workload: Workload) -> float:
    """The workload's budget in seconds of the wire clock: the run's own (--timeout),
    else its mode's default stretched to BUDGET_MARGIN x the least time the workload
    needs on the wire (a budget catches a hung run, and at a large dilation a big
    workload outlasts the fixed default). plan_run adds a virtual run's retry span."""
    if cfg.timeout_s is not None:
        return cfg.timeout_s
    return max(cfg.timeout(), BUDGET_MARGIN * min_wire_s(fabric, workload, cfg.mtu_bytes)[0])


def agent_settings(cfg: RunConfig, dilation: Dilation, start_delay: float,
                   budget_s: float) -> AgentSettings:
    return AgentSettings(cc=cfg.cc, recovery=cfg.recovery, dilation=dilation.factor,
                         dcqcn_profile=cfg.dcqcn_profile,
                         mtu_bytes=cfg.mtu_bytes, window_pkts=cfg.window_pkts,
                         rto_us=cfg.fixed_rto_us(), rto_backoff=cfg.ack_timeout is None,
                         link_jitter_ns=cfg.link_jitter_ns,
                         retry_cnt=cfg.retry_cnt,
                         start_delay_us=start_delay * 1e6, timeout_s=budget_s,
                         plb=cfg.plb, plb_rounds=cfg.plb_rounds,
                         plb_idle_rounds=cfg.plb_idle_rounds, priority_queues=cfg.priority_queues,
                         ack_class=cfg.ack_class,
                         # A virtual clock honours any timer exactly and wakes no one
                         # late: no floor, and no catch-up beyond one frame's worth.
                         timer_resolution_ns=0 if cfg.virtual else
                         AgentSettings.timer_resolution_ns,
                         # The RTO floor guards against late wire-clock timers; a virtual
                         # run has none, and a wire-time floor is a modelled RTO that
                         # changes with the dilation (100 ms: 1 ms modelled at D = 100,
                         # 20 us at 5000). Its RTO is the path's alone, in modelled time.
                         rto_wire_ms=0.0 if cfg.virtual else AgentSettings.rto_wire_ms,
                         pacing_burst_ns=0 if cfg.virtual else
                         AgentSettings.pacing_burst_ns)


def _check_credit(cfg: RunConfig, model: Fabric) -> None:
    """Credit runs: every switch port's buffer holds two of the largest frames it may
    carry (refused before anything starts: a larger frame would wait for ever)."""
    if cfg.flow_control is FlowControlMode.CREDIT:
        try:
            check_buffer(CREDIT.buffer_bytes, model.switch_mtu, "credit buffer_bytes")
        except ValueError as exc:
            raise RunConfigError(f"run configuration: topology {model.name}: {exc}") from None


def _check_path_mtu(cfg: RunConfig, model: Fabric) -> None:
    """Every host's MTU holds the largest RoCE packet of the run's path MTU: a larger one
    never leaves a real NIC (nor a veth: EMSGSIZE), yet a virtual run carried it."""
    need = max_ip_bytes(cfg.mtu_bytes)
    for h in model.hosts:
        if h.mtu < need:
            fits = [m for m in IB_MTUS if max_ip_bytes(m) <= h.mtu]
            hint = (f"mtu_bytes {fits[-1]} is the largest path MTU that fits it" if fits
                    else "no RoCE path MTU fits it")
            raise RunConfigError(
                f"run configuration: mtu_bytes {cfg.mtu_bytes} (the RoCE path MTU) makes IP "
                f"packets of up to {need} bytes; host {h.name} of {model.name} has MTU "
                f"{h.mtu} ({hint}; or raise the topology's mtu)")


def plan_run(cfg: RunConfig, model: Fabric | None = None) -> RunPlan:
    """`model`: the modelled fabric (default: the run's topology file)."""
    cfg.validate()
    if model is None:
        # The user's file, checked in full as `emu topo check` does: errors are reported
        # all at once, at their positions in that file.
        model = load_topology(cfg.topo)
    if cfg.fail_link is not None and not model.link_between(*cfg.fail_link):
        a, b = cfg.fail_link
        raise RunConfigError(f"run configuration: fail_link: topology {model.name} has no "
                             f"link between {a} and {b}")
    if not cfg.link_delay:
        # The modelled network has no delay either: ideal FCTs, BDP windows, the rate
        # line and effective.json describe what runs.
        model = without_link_delay(model)
    _check_path_mtu(cfg, model)
    _check_credit(cfg, model)
    dilation = cfg.dilation_for(model)
    fabric = model.on_wire(dilation)
    from emu.control import ControlError, check_group_sizes

    try:  # on the fabric the controller routes: it finds these paths computed
        check_group_sizes(fabric)
    except ControlError as exc:
        raise RunConfigError(f"topology {model.name}: {exc}") from None
    workload = build_workload(cfg.workload, {h.name: h.switch for h in fabric.hosts},
                              host_rates(model))
    budget_s = workload_budget_s(cfg, fabric, workload)
    try:
        delay_s = effective_start_delay_s(cfg, fabric)
        agents = agent_configs(fabric, workload, agent_settings(cfg, dilation, delay_s,
                                                                budget_s),
                               seed=cfg.workload.seed)
    except ConfigError as exc:  # what RunConfig's own checks did not foresee: one line
        raise RunConfigError(f"run configuration: the hosts' configuration: {exc}") from None
    if cfg.virtual and cfg.timeout_s is None and (span := retry_span_wire_s(agents)):
        # A default virtual budget also holds the longest a QP retries before it fails
        # (known once the RTOs are), so a dead path ends in failed flows with NIC-like
        # timers too: waiting costs virtual time nothing.
        budget_s += span
        agents = {h: dataclasses.replace(a, timeout_s=budget_s) for h, a in agents.items()}
    return RunPlan(cfg, fabric, workload, agents, model, dilation, delay_s, budget_s)
