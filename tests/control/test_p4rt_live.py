"""The controller programs embedded switches over real P4Runtime (gRPC on unix sockets)."""

from __future__ import annotations

import os
import uuid

from emu.control import FabricController, LbSettings
from emu.control import program as P
from emu.control.p4rt import connect
from emu.core.clock import VirtualClock
from emu.sim.frames import parse, udp_frame
from emu.topo import clos_fabric


def test_program_a_fabric_over_p4runtime_and_forward():
    from emu.p4.frontend import load_program
    from emu.p4.p4info import generate_p4info
    from emu.runtime.devconfig import make_program_config
    from emu.runtime.device import LocalDevice
    from emu.runtime.server import P4RuntimeServer
    from emu.sim.fabric import FABRIC_P4, P4SRC

    fabric = clos_fabric(leaves=2, spines=1, hosts_per_leaf=1)
    p4info = generate_p4info(load_program(str(FABRIC_P4), include_dirs=[str(P4SRC)]))
    clock = VirtualClock()
    servers, devices, outputs, addresses, paths = [], {}, {}, {}, []
    try:
        for sw in fabric.switches:
            out: list[tuple[int, bytes]] = []
            dev = LocalDevice(sw.device_id, clock, cpu_port=None,
                              output=lambda p, f, out=out: out.append((p, f)))
            srv = P4RuntimeServer(dev)
            path = f"/tmp/emu-fabric-{uuid.uuid4().hex[:8]}.sock"
            srv.start(f"unix:{path}")
            servers.append(srv)
            paths.append(path)
            devices[sw.name] = dev
            outputs[sw.name] = out
            addresses[sw.name] = f"unix:{path}"
        handles = connect(fabric, addresses, p4info, device_config=make_program_config(str(FABRIC_P4), [str(P4SRC)]))
        ctl = FabricController(fabric, handles, lb=LbSettings(mode="spray"))
        ctl.program()

        h1, h2 = fabric.hosts
        leaf1 = fabric.switch(h1.switch)
        frame = udp_frame(h1.mac, h1.gateway_mac, str(h1.ip), str(h2.ip), 50000, ttl=9)
        clock.advance(7_000)  # egress timestamps are then 7 us, not 0
        devices[leaf1.name].inject(h1.switch_port, frame)
        clock.run_until_idle()
        ((port, sent),) = outputs[leaf1.name]
        (up,) = leaf1.fabric_ports
        assert port == up.number
        p = parse(sent)
        assert p.ttl == 8 and p.checksum_ok
        assert p.src_mac == leaf1.mac and p.dst_mac == fabric.switch(up.peer.node).mac
        # counters come back over P4Runtime
        assert ctl.port_counters(leaf1.name)[h1.switch_port].rx_pkts == 1
        assert ctl.port_counters(leaf1.name)[up.number].tx_pkts == 1
        (g,) = ctl.group_counters(leaf1.name)
        assert g.packets == (1,)
        # registers too, every port in one read: only the uplink saw a dequeue
        q = ctl.queue_readings(leaf1.name)
        assert set(q) == {p.number for p in leaf1.ports}
        assert q[up.number] == (0, 7) and q[h1.switch_port] == (0, 0)
        # a mode change is one default-action write
        ctl.set_lb("ecmp", switches=leaf1.name)
        client = handles[leaf1.name].client
        from p4.v1 import p4runtime_pb2

        ent = p4runtime_pb2.Entity()
        ent.table_entry.table_id = handles[leaf1.name].info.table(P.LB_CONFIG).preamble.id
        ent.table_entry.is_default_action = True
        (got,) = client.read([ent])
        assert got.table_entry.action.action.params[0].value == b"\x00"
        for h in handles.values():
            h.client.close()  # type: ignore[attr-defined]
    finally:
        for srv in servers:
            srv.stop(0)
        for path in paths:
            if os.path.exists(path):
                os.unlink(path)
