"""fabric.p4's control-plane contract, and the entries each switch should hold.

Pure: turns routes, settings and TE pins into TableEntry values; the controller
diffs them against what a switch holds and writes the difference.
"""

from __future__ import annotations

from collections.abc import Mapping

from emu.topo import Fabric

from .params import MAX_MEMBERS, EcnSettings, LbSettings, QosSettings
from .routes import SwitchRoutes
from .southbound import Lpm, TableEntry
from .te import FlowKey

# Tables and their actions (P4Info names).
LB_CONFIG = "FabricIngress.routing.lb_config"
SET_LB_CONFIG = "FabricIngress.routing.set_lb_config"
IPV4_LPM = "FabricIngress.routing.ipv4_lpm"
ROUTE_TO_PORT = "FabricIngress.routing.route_to_port"
ROUTE_TO_GROUP = "FabricIngress.routing.route_to_group"
ECMP_GROUP = "FabricIngress.routing.ecmp_group"
SET_GROUP = "FabricIngress.routing.set_group"
TE_FLOW = "FabricIngress.routing.te_flow"
TE_PIN = "FabricIngress.routing.te_pin"
PORT_NEIGHBOR = "FabricIngress.port_neighbor"
SET_MACS = "FabricIngress.set_macs"
TRAFFIC_CLASS = "FabricIngress.traffic_class"
SET_PRIORITY = "FabricIngress.set_priority"
ECN_CONFIG = "FabricEgress.ecn.ecn_config"
SET_RED = "FabricEgress.ecn.set_red"
NO_MARKING = "FabricEgress.ecn.no_marking"

# Counters (packets_and_bytes unless noted) and registers.
PORT_RX = "FabricIngress.port_rx"
PORT_DROPS = "FabricIngress.port_drops"  # packets
PORT_TX = "FabricEgress.port_tx"
PORT_ECN_MARKS = "FabricEgress.ecn.port_ecn_marks"  # packets
MEMBER_PACKETS = "FabricIngress.routing.member_packets"  # index group_id * 8 + member
PORT_QDEPTH = "port_qdepth"  # index qdepth_index(port, priority)
PORT_QDEPTH_TIME = "port_qdepth_time_us"
FLOWLET_TIME = "FabricIngress.routing.flowlet_time_us"
FLOWLET_PORT = "FabricIngress.routing.flowlet_port"
SPRAY_NEXT = "FabricIngress.routing.spray_next"


def mac_int(mac: str) -> int:
    return int(mac.replace(":", ""), 16)


def member_counter_index(group_id: int, member: int) -> int:
    return group_id * MAX_MEMBERS + member


def qdepth_index(port: int, priority: int) -> int:
    """fabric.p4's QDEPTH_INDEX: the queue reading of `priority`'s queue on `port`."""
    return port << 3 | priority


def routing_entries(routes: SwitchRoutes,
                    group_ids: Mapping[tuple[int, ...], int]) -> list[TableEntry]:
    """ecmp_group, ipv4_lpm and port_neighbor entries of one switch."""
    out: list[TableEntry] = []
    for members, gid in sorted(group_ids.items(), key=lambda kv: kv[1]):
        ports = list(members) + [0] * (MAX_MEMBERS - len(members))
        params = {"member_count": len(members)}
        params.update({f"port_{i}": p for i, p in enumerate(ports)})
        out.append(TableEntry(ECMP_GROUP, {"meta.group_id": gid}, SET_GROUP, params))
    for r in routes.routes:
        match = {"hdr.ipv4.dstAddr": Lpm(int(r.prefix.network_address), r.prefix.prefixlen)}
        if r.port is not None:
            out.append(TableEntry(IPV4_LPM, match, ROUTE_TO_PORT, {"port": r.port}))
        else:
            assert r.group is not None
            out.append(TableEntry(IPV4_LPM, match, ROUTE_TO_GROUP,
                                  {"group_id": group_ids[r.group]}))
    for port, (smac, dmac) in sorted(routes.neighbors.items()):
        out.append(TableEntry(PORT_NEIGHBOR, {"standard_metadata.egress_spec": port}, SET_MACS,
                              {"smac": mac_int(smac), "dmac": mac_int(dmac)}))
    return out


def ecn_entries(fabric: Fabric, switch: str,
                per_port: Mapping[int, EcnSettings]) -> list[TableEntry]:
    out = []
    for port in sorted(per_port):
        s = per_port[port]
        s.validate_for(fabric.switch(switch).port(port).depth_pkts, f"{switch}:{port}")
        match = {"standard_metadata.egress_port": port}
        if s.enabled:
            out.append(TableEntry(ECN_CONFIG, match, SET_RED, s.action_params()))
        else:
            out.append(TableEntry(ECN_CONFIG, match, NO_MARKING, {}))
    return out


def qos_entries(qos: QosSettings) -> list[TableEntry]:
    return [TableEntry(TRAFFIC_CLASS, {"hdr.ipv4.dscp": dscp}, SET_PRIORITY, {"prio": prio})
            for dscp, prio in sorted(qos.dscp_priority.items())]


def te_entries(pins: Mapping[FlowKey, int]) -> list[TableEntry]:
    return [
        TableEntry(TE_FLOW, {"hdr.ipv4.srcAddr": k.src_ip, "hdr.ipv4.dstAddr": k.dst_ip,
                             "hdr.ipv4.protocol": k.proto, "meta.l4_sport": k.sport,
                             "meta.l4_dport": k.dport},
                   TE_PIN, {"member_index": idx})
        for k, idx in sorted(pins.items(), key=lambda kv: (kv[0].src_ip, kv[0].dst_ip,
                                                           kv[0].sport, kv[0].dport))
    ]


def lb_default(lb: LbSettings, device_id: int) -> tuple[str, str, dict[str, int]]:
    """(table, action, params) of the lb_config default action."""
    return LB_CONFIG, SET_LB_CONFIG, lb.action_params(device_id)
