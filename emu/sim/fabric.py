"""A whole fabric in one process on a virtual clock: embedded P4 switches joined by
in-memory links, simple hosts, and the fabric controller programming the switches.

    sim = SimFabric(load_topology("clos4"), lb=LbSettings(mode=LbMode.FLOWLET))
    sim.hosts["h1"].send_udp("h3", sport=49152)
    sim.run_until_idle()
    sim.hosts["h3"].received            # [(time_ns, frame), ...]

Every topology link becomes a `MemLink` with the link's rate and delay; each switch
port's egress queue gets the port's rate and depth, so queues build from real
enqueues in the v1model traffic manager. `link_down()` takes the MemLink down and
tells the controller, as the emulator's CLI does.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emu.control import EcnSettings, FabricController, LbSettings, QosSettings
from emu.control.inprocess import InProcessSwitchHandle
from emu.core import MemLink, VirtualClock
from emu.core.port import FramePort
from emu.core.seeds import switch_seed
from emu.core.wire import ROCEV2_UDP_PORT, WIRE_OVERHEAD_BYTES
from emu.topo import Fabric, Host, Link

from .frames import udp_frame

P4SRC = Path(__file__).resolve().parents[2] / "p4src"
FABRIC_P4 = P4SRC / "fabric.p4"


@functools.lru_cache(maxsize=4)
def compile_fabric(defines: tuple[tuple[str, str], ...] = ()) -> Any:
    """fabric.p4 compiled for the embedded target (cached per process, and on disk across
    processes: emu.p4.target.compile_cache)."""
    from emu.p4.target.compile_cache import compile_file_cached

    return compile_file_cached(str(FABRIC_P4), include_dirs=[str(P4SRC)],
                               defines=dict(defines))


@dataclass
class SimHost:
    """A host that sends frames on its link and records what arrives."""

    host: Host
    port: FramePort
    clock: VirtualClock
    sim: SimFabric
    received: list[tuple[int, bytes]] = field(default_factory=list)
    on_receive: Callable[[bytes], None] | None = None

    def __post_init__(self) -> None:
        self.port.set_receiver(self._rx)

    def _rx(self, frame: bytes) -> None:
        self.received.append((self.clock.now_ns(), frame))
        if self.on_receive is not None:
            self.on_receive(frame)

    def send(self, frame: bytes) -> bool:
        return self.port.send(frame)

    def udp_to(self, dst: str, sport: int, dport: int = ROCEV2_UDP_PORT, **kw: Any) -> bytes:
        """A frame from this host to host `dst` (addressed to the gateway MAC)."""
        d = self.sim.fabric.host(dst)
        return udp_frame(self.host.mac, self.host.gateway_mac, str(self.host.ip), str(d.ip),
                         sport, dport, **kw)

    def send_udp(self, dst: str, sport: int, dport: int = ROCEV2_UDP_PORT, **kw: Any) -> bool:
        return self.send(self.udp_to(dst, sport, dport, **kw))


class SimFabric:
    def __init__(self, fabric: Fabric, *, lb: LbSettings | None = None,
                 ecn: EcnSettings | None = None, qos: QosSettings | None = None,
                 clock: VirtualClock | None = None, program: Any = None,
                 program_switches: bool = True, pcap_dir: Path | None = None,
                 flow_control: Any = None, seed: int = 1, model: Fabric | None = None,
                 pcap_dilation: float = 1.0, link_jitter_ns: int = 0) -> None:
        from emu.p4.api import P4Switch

        self.fabric = fabric
        # The modelled fabric (`fabric` is it on the wire, model.on_wire(dilation)): PFC
        # headroom is the modelled link's, its response time looked up by modelled speed.
        self.model = model if model is not None else fabric
        self.clock = clock or VirtualClock()
        self.program = program if program is not None else compile_fabric()
        nq = (qos or QosSettings()).priority_queues
        self.switches: dict[str, Any] = {}
        for sw in fabric.switches:
            p4 = P4Switch(self.program, clock=self.clock, priority_queues=nq, capture=False,
                          seed=switch_seed(seed, sw.device_id),
                          wire_overhead_bytes=WIRE_OVERHEAD_BYTES)
            for port in sw.ports:
                p4.set_queue_depth(port.depth_pkts, port.number)
                p4.set_queue_rate(port.number, rate_bps=port.rate_bps)
            self.switches[sw.name] = p4
        self.qos = qos or QosSettings()
        self.flow_control = flow_control
        if flow_control is not None and flow_control.enabled:
            self._enable_flow_control(flow_control)
        self.links: dict[int, MemLink] = {}
        self._ports: dict[tuple[str, int], FramePort] = {}
        for link in fabric.links:
            # Each link draws its jitter from its own generator, seeded by the run's
            # seed and the link: the same frames get the same delays, whatever order
            # the other links' events run in.
            ml = MemLink(self.clock, rate_bps=link.rate_bps, delay_ns=link.delay_ns,
                         overhead_bytes=WIRE_OVERHEAD_BYTES, names=(link.a.intf, link.b.intf),
                         jitter_ns=link_jitter_ns,
                         rng=random.Random(f"link-jitter:{seed}:{link.index}"))
            self.links[link.index] = ml
            self._ports[(link.a.node, link.a.port)] = ml.a
            self._ports[(link.b.node, link.b.port)] = ml.b
        self._pcaps: dict[tuple[str, int], tuple[Any, Any]] = {}
        self._pcap_dilation = pcap_dilation
        if pcap_dir is not None:
            self._open_pcaps(Path(pcap_dir))
        for name, p4 in self.switches.items():
            for port in fabric.switch(name).ports:
                fp = self._ports[(name, port.number)]
                # The switch's receive itself, not P4Switch.inject (one call less per
                # packet-hop): flow control, which replaces receive, is enabled above.
                inject = functools.partial(p4.sw.receive, port.number)
                pcaps = self._pcaps.get((name, port.number))
                fp.set_receiver(inject if pcaps is None else self._captured(pcaps[0], inject))
            if self._pcaps:
                p4.sw.frame_handlers.append(functools.partial(self._switch_out, name))
            else:  # each port's frames straight to its link: no handler per packet-hop
                p4.sw.port_outputs.update(
                    {port: fp.send for (node, port), fp in self._ports.items() if node == name})
        self.hosts = {h.name: SimHost(h, self._ports[(h.name, h.port)], self.clock, self)
                      for h in fabric.hosts}
        handles = {n: InProcessSwitchHandle(n, sw) for n, sw in self.switches.items()}
        self.controller = FabricController(fabric, handles, lb=lb, ecn=ecn, qos=qos)
        if program_switches:
            self.controller.program()
        if flow_control is not None and flow_control.mode == "credit":
            for p4 in self.switches.values():
                p4.flow_control.start()  # the links exist now: first credit announcements

    def _enable_flow_control(self, fc: Any) -> None:
        """PFC or credit on every switch (emu.core.pfc.FlowControl): each port with the
        thresholds of its link's topology `pfc:` keys, and knowing its link, for the
        headroom PFC needs (SwitchFlowControl.headroom_report) and the rate credit's
        re-send period derives from."""
        from emu.topo.pfc import port_links, switch_flow_control

        for sw in self.fabric.switches:
            self.switches[sw.name].enable_flow_control(
                switch_flow_control(self.fabric, sw.name, fc),
                links=port_links(self.model, sw.name),
                src_mac=lambda _p, m=sw.mac: bytes.fromhex(m.replace(":", "")))

    def host_mac(self, host: str, **kw: Any) -> Any:
        """A PFC-aware MAC (emu.roce.pfc.HostMac) on `host`'s link port, with the
        fabric's DSCP -> priority map and lossless priorities; give it to a Nic/Agent.
        Keyword arguments go to HostPfcParams (e.g. the slow-receiver buffer). In
        credit mode it is an emu.roce.credit.HostCreditMac (HostCreditParams)."""
        from emu.roce.credit import HostCreditMac, HostCreditParams
        from emu.roce.pfc import HostMac

        h = self.fabric.host(host)
        params = self.host_mac_params(host, **kw)
        port = self._ports[(h.name, h.port)]
        if isinstance(params, HostCreditParams):
            return HostCreditMac(self.clock, port, params)
        return HostMac(self.clock, port, params)

    def host_mac_params(self, host: str, **kw: Any) -> Any:
        """The parameters `host_mac` gives its MAC, without making one (a credit MAC
        announces its credit on the link as it is made)."""
        from emu.roce.credit import HostCreditParams
        from emu.roce.pfc import HostPfcParams

        h = self.fabric.host(host)
        fc = self.flow_control
        rate = self.fabric.links[h.link].rate_bps
        dscp = dict(self.qos.dscp_priority)
        if fc is not None and fc.mode == "credit":
            return HostCreditParams(mac=h.mac, rate_bps=rate, dscp_priority=dscp,
                                    lossless=fc.lossless, credit=fc.credit,
                                    **{"mtu": h.mtu, **kw})
        lossless = fc.lossless if fc is not None else frozenset()
        return HostPfcParams(mac=h.mac, rate_bps=rate, dscp_priority=dscp,
                             lossless=lossless, **kw)

    def _open_pcaps(self, directory: Path) -> None:
        """`<iface>_in.pcap` / `<iface>_out.pcap` per switch port, as the switch daemon
        (and BMv2's --pcap) writes them; stamps in nanoseconds of modelled time since the
        start (the clock's time divided by `pcap_dilation`, the run's dilation), so what
        a capture shows is the modelled fabric's timing, not the slowed wire's."""
        from emu.core.fdlimit import HEADROOM, ensure_open_files
        from emu.switch.pcap import PcapWriter, pcap_paths

        directory.mkdir(parents=True, exist_ok=True)
        # two files per port, open for the whole run, and room for everything else
        ensure_open_files(2 * sum(len(sw.ports) for sw in self.fabric.switches) + HEADROOM)
        for sw in self.fabric.switches:
            for port in sw.ports:
                pin, pout = pcap_paths(str(directory), port.intf)
                self._pcaps[(sw.name, port.number)] = (
                    PcapWriter(pin, warn=False, nanosecond=True),
                    PcapWriter(pout, warn=False, nanosecond=True))

    def _pcap_ns(self) -> int:
        return round(self.clock.now_ns() / self._pcap_dilation)

    def _captured(self, writer: Any, then: Callable[[bytes], None]) -> Callable[[bytes], None]:
        def capture(frame: bytes) -> None:
            writer.write(frame, self._pcap_ns())
            then(frame)

        return capture

    def close_pcaps(self) -> list[str]:
        """Close the captures; what stopped early (disk full), for the run's notes."""
        from emu.switch.pcap import capture_problems

        for pin, pout in self._pcaps.values():
            pin.close()
            pout.close()
        return capture_problems(w for pair in self._pcaps.values() for w in pair)

    def _switch_out(self, switch: str, port: int, frame: bytes) -> None:
        fp = self._ports.get((switch, port))
        if fp is not None:
            pcaps = self._pcaps.get((switch, port)) if self._pcaps else None
            if pcaps is not None:
                pcaps[1].write(frame, self._pcap_ns())
            fp.send(frame)

    def port(self, node: str, port: int) -> FramePort:
        """The FramePort at node:port (its stats count what was sent on the link)."""
        return self._ports[(node, port)]

    def link_down(self, a: str, b: str | None = None, *, port: int | None = None) -> Link:
        link = self.controller.link_down(a, b, port=port)
        self.links[link.index].set_up(False)
        return link

    def link_up(self, a: str, b: str | None = None, *, port: int | None = None) -> Link:
        link = self.controller.link_up(a, b, port=port)
        self.links[link.index].set_up(True)
        return link

    def run_for(self, ns: int) -> None:
        self.clock.advance(ns)

    def run_until_idle(self, max_ns: int | None = None) -> None:
        self.clock.run_until_idle(max_ns)
