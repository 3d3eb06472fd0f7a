"""Wire constants (and the MAC address parse) shared by the hosts (emu.roce), the
virtual-time fabric (emu.sim), the controller and the tests, so each number has one
definition. fabric.p4 repeats some of them in p4src/include/headers.p4;
tests/control/test_contract.py checks they agree.
"""

from __future__ import annotations

# EtherTypes (IEEE 802 numbers).
ETH_P_ALL = 0x0003  # AF_PACKET protocol: every frame, whatever its EtherType
ETH_P_IPV4 = 0x0800
ETH_P_ARP = 0x0806
ETH_P_8021Q = 0x8100  # a VLAN tag
ETH_P_IPV6 = 0x86DD

# What an Ethernet frame costs on the wire beyond the bytes the emulator carries:
# preamble and SFD (8), FCS (4; frames here carry none) and the inter-frame gap (12).
# NIC pacers, switch egress ports and links all serialise frame + this.
WIRE_OVERHEAD_BYTES = 24

# v1model switch ports are 9 bits wide and BMv2 reserves the last as the drop port, so a
# switch (embedded or BMv2) has ports 0..MAX_PORT; a topology numbers them from 1.
DROP_PORT = 511
MAX_PORT = DROP_PORT - 1
# The port a fabric switch talks to its controller on (fabric.p4's CPU_PORT, the
# daemon's --cpu-port in a run): never a port of the topology.
CPU_PORT = 255
# A generated fabric numbers its ports one after another, so below the CPU port.
MAX_GENERATED_PORT = CPU_PORT - 1
# Members of one of fabric.p4's next-hop groups at most (headers.p4 MAX_MEMBERS: P4 has
# no loops, so the adaptive choice is unrolled over them): a switch with more equal-cost
# next hops towards a leaf cannot be programmed.
MAX_GROUP_MEMBERS = 16

# IP protocol numbers.
IP_PROTO_TCP = 6
IP_PROTO_UDP = 17

# RoCEv2: the IB transport over UDP to this port.
ROCEV2_UDP_PORT = 4791
# The largest message the host stack sends or a run may ask for: under 2 GiB (IBTA's
# 2^31-byte message limit; a RETH's DMA length is 32 bits).
MAX_MESSAGE_BYTES = (1 << 31) - 1

# DSCPs: RoCE data (NVIDIA's default class) and the CNPs (the class operators put on
# the highest-priority queue; ACK/NAKs too when a NIC sends them like CNPs).
DSCP_ROCE_DATA = 26
DSCP_CNP = 48

# BTH opcodes that code outside emu.roce's codec names (RC transport = 0x00 + operation).
OP_SEND_ONLY = 0x04
OP_ACK = 0x11
OP_CNP = 0x81


def mac_bytes(mac: bytes | str) -> bytes:
    """A MAC address as its 6 bytes, from bytes or "aa:bb:cc:dd:ee:ff"; ValueError else."""
    if isinstance(mac, str):
        mac = bytes.fromhex(mac.replace(":", ""))
    if len(mac) != 6:
        raise ValueError(f"a MAC address has 6 bytes, got {len(mac)}")
    return mac
