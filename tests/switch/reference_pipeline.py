"""A hand-written Python data path for tests/switch/p4/ecmp_ecn.p4.

It runs that program's semantics on the real engines (tables and action
selector built from the P4Info, the v1model TrafficManager, BMv2's crc16 and
csum16), written independently of the compiler, and serves as an oracle for the
compiled program: test_reference.py feeds both the same entries and frames in
process. A test fixture, not part of emu: no device config loads it (the switch
daemon and the P4Runtime server run compiled programs only).
"""

from __future__ import annotations

import struct
from typing import Any

from emu.core.clock import Clock
from emu.p4.v1model.hashes import crc16
from emu.p4.v1model.traffic_manager import DequeueInfo, DropCounters, DropReason, TrafficManager
from emu.runtime.dataplane import DigestFn, OutputFn
from emu.runtime.errors import invalid
from emu.runtime.infoplane import InfoControlPlane
from emu.runtime.translate import P4InfoIndex

CPU_PORT = 255
DROP_PORT = 511
ECN_THRESHOLD = 10
_IPV4 = 0x0800
_pack5 = struct.Struct("!IIBHH").pack
_pack3 = struct.Struct("!IIB").pack
_words10 = struct.Struct("!10H").unpack_from


def _ipv4_csum(buf: bytearray) -> int:
    """csum16 over the 20-byte IPv4 header at offset 14 (checksum field zeroed)."""
    total = sum(_words10(buf, 14))
    total = (total & 0xFFFF) + (total >> 16)
    total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


class EcmpEcnDataplane:
    """ecmp_ecn.p4: IPv4 LPM -> action selector (crc16 over the 5-tuple) -> ECN at egress."""

    def __init__(self, index: P4InfoIndex, clock: Clock) -> None:
        self.control = InfoControlPlane(index, clock)
        try:
            self.table = self.control.tables["MyIngress.ipv4_lpm"]
            self.selector = self.control.action_profiles["MyIngress.ecmp_selector"]
            self.port_rx = self.control.counters["MyIngress.port_rx"]
            self.last_len = self.control.registers["MyIngress.last_len"]
        except KeyError as exc:
            raise invalid(f"P4Info is not ecmp_ecn.p4's: missing {exc}") from None
        self.drops = DropCounters()
        self.tm = TrafficManager(clock, self._egress, drops=self.drops)
        self._clock = clock
        self._out: OutputFn | None = None
        # Ports with no rate limit and a non-zero depth. A packet for such a port
        # whose queue is empty would be dequeued at once with enq_qdepth 0 (BMv2:
        # "queues never build without a rate"), so egress runs directly, skipping
        # two timer round trips; `bypassed` counts these packets per port.
        self._unshaped: set[int] = set()
        self._shaped: set[int] = set()
        self._shape_all = False
        self.bypassed: dict[int, int] = {}

    # -- Dataplane ------------------------------------------------------------------

    def set_output(self, out: OutputFn) -> None:
        self._out = out

    def set_digest_sink(self, sink: DigestFn | None) -> None:
        pass

    def set_queue_rate(self, port: int | None, *, rate_bps: float | None = None,
                       rate_pps: float | None = None) -> None:
        self.tm.set_queue_rate(port, rate_bps=rate_bps, rate_pps=rate_pps)
        self._reshape(port)

    def set_queue_depth(self, port: int | None, depth_pkts: int, *,
                        priority: int | None = None) -> None:
        self.tm.set_queue_depth(port, depth_pkts, priority=priority)
        self._reshape(port)

    def _reshape(self, port: int | None) -> None:
        self._unshaped.clear()  # recomputed per port on next use
        self._shaped.clear()

    def _is_unshaped(self, port: int) -> bool:
        cfg = self.tm.port_config(port)
        free = (not cfg["rate_bps"] and not cfg["rate_pps"]
                and min(cfg["depths_pkts"]) > 0)  # type: ignore[call-overload]
        (self._unshaped if free else self._shaped).add(port)
        return free

    def take_tm_lag_ns(self) -> int | None:
        return self.tm.take_max_lag_ns()

    def queue_info(self, port: int) -> dict[str, Any]:
        pk, by = self.tm.occupancy(port)
        st = self.tm.stats(port)
        return {**self.tm.port_config(port), "queued_pkts": pk, "queued_bytes": by,
                "enq_pkts": st.enq_pkts, "deq_pkts": st.deq_pkts,
                "bypassed_pkts": self.bypassed.get(port, 0)}

    def close(self) -> None:
        self._out = None

    # -- ingress --------------------------------------------------------------------

    def inject(self, port: int, frame: bytes) -> None:
        n = len(frame)
        self.port_rx.count(port, n)
        self.last_len.write(port, n)
        if port == CPU_PORT:
            if n < 2:
                self.drops.count(port, "parser_short")
                return
            egress = (frame[0] << 1) | (frame[1] >> 7)
            # packet_out is setInvalid()ed and not emitted: strip it.
            self._enqueue(egress, bytearray(frame[2:]), port)
            return
        if n < 34 or frame[12] != 0x08 or frame[13] != 0x00:
            self.drops.count(port, DropReason.PIPELINE_DROP)
            return
        buf = bytearray(frame)
        dst = int.from_bytes(buf[30:34], "big")
        entry = self.table.lookup((dst,))
        if entry is None:
            self.drops.count(port, DropReason.PIPELINE_DROP)
            return
        action = entry.action
        if action is None:
            if entry.group_id is not None:
                proto = buf[23]
                src = int.from_bytes(buf[26:30], "big")
                if (proto == 6 or proto == 17) and n >= 38:
                    h = crc16(_pack5(src, dst, proto, (buf[34] << 8) | buf[35],
                                     (buf[36] << 8) | buf[37]))
                else:  # BMv2 leaves the fields of an invalid header (l4) out of the hash
                    h = crc16(_pack3(src, dst, proto))
                member = self.selector.select(entry.group_id, h)
                if member is None:
                    self.drops.count(port, DropReason.PIPELINE_DROP)
                    return
                action = member.action
            else:
                action = self.selector.member_action(entry.member_id)  # type: ignore[arg-type]
        name = action.action
        if name == "MyIngress.set_nhop":
            dmac, egress = action.params
            buf[6:12] = buf[0:6]
            buf[0:6] = dmac.to_bytes(6, "big")
            buf[22] = (buf[22] - 1) & 0xFF
        elif name == "MyIngress.send_to_cpu":
            egress = CPU_PORT
        else:
            self.drops.count(port, DropReason.PIPELINE_DROP)
            return
        self._enqueue(egress, buf, port)

    def _enqueue(self, egress: int, buf: bytearray, ingress: int) -> None:
        if egress == DROP_PORT:
            self.drops.count(ingress, DropReason.PIPELINE_DROP)
            return
        if egress in self._unshaped or (egress not in self._shaped
                                         and self._is_unshaped(egress)):
            if not self.tm.occupancy(egress)[0]:
                ts = self._clock.now_ns() // 1000
                self.bypassed[egress] = self.bypassed.get(egress, 0) + 1
                self._egress(egress, (buf, ingress), DequeueInfo(ts, 0, 0, 0, 0))
                return
        self.tm.enqueue(egress, (buf, ingress), len(buf))

    # -- egress ---------------------------------------------------------------------

    def _egress(self, port: int, item: object, info: DequeueInfo) -> None:
        buf: bytearray
        ingress: int
        buf, ingress = item  # type: ignore[misc]
        out = self._out
        if out is None:
            return
        if len(buf) >= 34 and buf[12] == 0x08 and buf[13] == 0x00:
            if port != CPU_PORT and buf[15] & 3 and info.enq_qdepth >= ECN_THRESHOLD:
                buf[15] |= 3
            # update_checksum(csum16) over the IPv4 header (no options parsed); it runs
            # for every packet with a valid ipv4 header, CPU-bound ones included.
            buf[24] = buf[25] = 0
            c = _ipv4_csum(buf)
            buf[24] = c >> 8
            buf[25] = c & 0xFF
        if port == CPU_PORT:
            out(port, bytes(((ingress >> 1) & 0xFF, (ingress & 1) << 7)) + bytes(buf))
            return
        out(port, bytes(buf))
