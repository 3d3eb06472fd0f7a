"""The v1model switch: runs a CompiledProgram's generated pipeline on packets.

Order (BMv2 simple_switch): parser -> verify_checksum -> ingress -> (clone, digest,
resubmit, multicast / drop / unicast) -> traffic manager -> egress -> (E2E clone, drop)
-> compute_checksum -> deparser -> (recirculate | output). docs/v1model.md lists the
rules implemented here.

Failed assert/assume: BMv2 simple_switch aborts the whole process; a library must not,
so the switch logs an error, counts it in `assert_failures` and drops the packet.

Header values (checked against p4c's gauntlet STF tests, which leave these bytes as
don't-care): fields keep their stored value whatever the validity; setValid does not
clear them; writes to fields of an invalid header are stored; an invalid header is
not deparsed. An I2E clone re-parses the original bytes (BMv2 does too); an E2E clone
carries the egress-modified headers with metadata reset except the preserved fields.

Hot path: `receive` -> generated `run_ingress` (parser, verify, ingress spliced into
one function) -> TrafficManager.enqueue; on dequeue `_on_dequeue` -> generated
`run_egress` (egress, checksum, deparser). Clones, resubmit, recirculate, digests,
truncation and multicast take the slower general paths. Every switch running one
program shares its generated functions and classes (CompiledProgram.bind): only the
switch's own tables, counters and registers differ (closure cells).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Iterator
from typing import Any

from emu.core.clock import Clock, VirtualClock
from emu.core.wire import DROP_PORT
from emu.p4.tables import (
    ActionProfile,
    Table,
)
from emu.p4.v1model.hashes import hash_result
from emu.p4.v1model.replication import CloneSession, PacketReplicationEngine, Replica
from emu.p4.v1model.stateful import CounterArray, MeterArray, RegisterArray
from emu.p4.v1model.traffic_manager import DequeueInfo, DropCounters, DropReason, TrafficManager

from . import runtime
from .packet import (
    Digest,
    DirectMeter,
    OutputPacket,
    PacketState,
    _algo,
    _ckind,
    _hash_fn,
    _mkind,
)
from .program import CompiledProgram
from .tables import make_table

log = logging.getLogger("emu.p4.switch")
p4log = logging.getLogger("emu.p4.log_msg")
PIPELINE_ERROR = "pipeline_error"  # drop reason: an exception escaped the pipeline

NORMAL, INGRESS_CLONE, EGRESS_CLONE, RECIRC, REPLICATION, RESUBMIT = 0, 1, 2, 4, 5, 6
MAX_RESUBMIT_DEPTH = 16  # guards against programs that resubmit/recirculate forever


class _MacSm:
    """Standard metadata of a MAC-generated frame, for output handlers."""

    instance_type = 0


_MAC_SM = _MacSm()

# Names the generated code uses that are the same objects for every switch.
_SHARED: dict[str, Any] = {
    "ParserError": runtime.ParserError, "ExitBlock": runtime.ExitBlock,
    "AssertFailed": runtime.AssertFailed, "LoopLimit": runtime.LoopLimit, "Stack": runtime.Stack,
    "stack_next": runtime.stack_next, "stack_last": runtime.stack_last,
    "stack_get": runtime.stack_get, "pack": runtime.pack, "sat_add": runtime.sat_add,
    "hash_result": hash_result, "Pkt": runtime.Pkt,
}


class V1ModelSwitch:
    """One switch instance running a compiled program (data plane + object registry)."""

    def __init__(self, program: CompiledProgram, clock: Clock | None = None, *,
                 drop_port: int = DROP_PORT, seed: int = 0, queue_depth_pkts: int = 64,
                 priority_queues: int = 1, cpu_port: int | None = None,
                 wire_overhead_bytes: int = 0) -> None:
        self.program = program
        self.clock = clock if clock is not None else VirtualClock()
        self.drop_port = drop_port
        self.cpu_port = cpu_port
        self.rng = random.Random(seed)
        self.pre = PacketReplicationEngine()
        self.drops = DropCounters()
        self.tm = TrafficManager(self.clock, self._on_dequeue, default_depth_pkts=queue_depth_pkts,
                                 default_priority_queues=priority_queues, drops=self.drops,
                                 wire_overhead_bytes=wire_overhead_bytes)
        self.tables: dict[str, Table] = {}
        self.registers: dict[str, RegisterArray] = {}
        self.counters: dict[str, CounterArray] = {}
        self.direct_counters: dict[str, list[Table]] = {}
        self.meters: dict[str, MeterArray] = {}
        self.direct_meters: dict[str, DirectMeter] = {}
        self.action_profiles: dict[str, ActionProfile] = {}
        self.value_sets: dict[str, runtime.ValueSet] = {}
        self.digests: list[Digest] = []
        self.assert_failures = 0
        self.pipeline_errors = 0  # packets dropped by an exception in the pipeline
        self._errors_logged: set[tuple[str, str | None]] = set()
        self.output_handlers: list[Callable[[OutputPacket], None]] = []
        # Consumers that need only (port, frame): no OutputPacket is built for them.
        self.frame_handlers: list[Callable[[int, bytes], None]] = []
        # A port's own consumer of its frames (an in-memory link's send), called before
        # the frame handlers: no handler call and port lookup of its own per packet.
        self.port_outputs: dict[int, Callable[[bytes], object]] = {}
        self.packet_in_handler: Callable[[bytes], None] | None = None
        self.field_lists = program.info.field_lists
        self.flow_control: Any = None
        self._build()

    # ------------------------------------------------------------------ setup
    def _build(self) -> None:
        info = self.program.info
        # This switch's own objects (closure cells of the generated functions: see
        # CompiledProgram.bind); the runtime helpers are shared by every switch.
        ns: dict[str, Any] = {"DROP_PORT": self.drop_port, "RNG": self.rng,
                              "log_msg": self._log_msg}
        tables_by_name = {t["name"]: t for t in info.tables}
        for ob in info.objects:
            kind, py, name = ob["kind"], ob["py"], ob["name"]
            if kind == "hash":
                ns[py] = _hash_fn(ob["algo"], self.rng)
            elif kind == "register":
                r = RegisterArray(name, max(1, ob["size"]), ob["width"])
                self.registers[name] = ns[py] = r
                ns[py + "_c"] = r.cells  # written in place by the generated code
            elif kind == "counter":
                c = CounterArray(name, max(1, ob["size"]), _ckind(ob["type"]))
                self.counters[name] = ns[py] = c
                ns[py + "_p"], ns[py + "_b"] = c.cells  # counted in place by the generated code
            elif kind == "direct_counter":
                self.direct_counters.setdefault(name, [])
                ns[py] = None
            elif kind == "meter":
                m = MeterArray(name, max(1, ob["size"]), _mkind(ob["type"]), self.clock)
                self.meters[name] = ns[py] = m
            elif kind == "direct_meter":
                dm = DirectMeter(name, _mkind(ob["type"]), self.clock)
                self.direct_meters[name] = ns[py] = dm
            elif kind == "action_profile":
                ap = ActionProfile(name, size=ob.get("size") or 0, with_selector=ob["with_selector"])
                self.action_profiles[name] = ns[py] = ap
                algo = _algo(ob.get("algo", "crc16"))
                ns[py + "_hash"] = _hash_fn(algo, self.rng)
            elif kind == "value_set":
                vs = runtime.ValueSet(name, max(1, ob["size"]), tuple(ob["widths"]))
                self.value_sets[name] = ns[py] = vs
        for ob in info.objects:
            if ob["kind"] != "table":
                continue
            t = self._make_table(tables_by_name[ob["table"]])
            self.tables[ob["name"]] = ns[ob["py"]] = t
            ns[ob["py"] + "_apply"] = t.apply
            ns[ob["py"] + "_lookup"] = t.lookup
            ns[ob["py"] + "_default"] = t.default_entry
        ns = self.program.bind(_SHARED, ns)
        self.ns = ns
        self._parse = ns["parse"]
        self._verify = ns["verify"]
        self._ingress = ns["ingress"]
        self._egress = ns["egress"]
        self._compute = ns["compute"]
        self._deparse = ns["deparse"]
        self._hdr_len = ns["hdr_len"]
        self._run_ingress = ns["run_ingress"]
        self._run_egress = ns["run_egress"]
        self._now_ns = self.clock.now_ns
        self._new_hdr = ns[info.hdr_class]
        self._new_meta = ns[info.meta_class]
        self._new_sm = ns[info.sm_class]
        self._static_length = info.static_length
        self._fl = {k: [p[0].split(".") for p in v] for k, v in self.field_lists.items()}

    def _make_table(self, t: dict[str, Any]) -> Table:
        table = make_table(t, self.action_profiles, self.clock.now_ns)
        if t.get("direct_counter"):
            self.direct_counters.setdefault(t["direct_counter"], []).append(table)
        return table

    def _log_msg(self, msg: str, values: tuple[Any, ...]) -> None:
        if values:
            parts = msg.split("{}")
            text = parts[0] + "".join(str(v) + p for v, p in zip(values, parts[1:], strict=False))
        else:
            text = msg
        p4log.info("%s", text)

    def on_lookup(self, fn: Callable[[str, tuple[Any, ...]], None]) -> None:
        """Call `fn(table, key)` before each lookup of a table with a key: the table's
        P4Info name and its key values in key order (selector fields left out), as the
        matcher gets them. For tools that trace lookups (crosscheck's dry run records
        the keys so that random entries hit); a call more per lookup from then on."""
        for ob in self.program.info.objects:
            if ob["kind"] == "table":
                name, slot = ob["name"], ob["py"] + "_lookup"
                inner = self.ns[slot]

                def traced(key: tuple[Any, ...], _inner: Any = inner, _name: str = name) -> Any:
                    fn(_name, key)
                    return _inner(key)

                self.ns[slot] = traced  # rebinds it in the generated code (_Namespace)

    # ------------------------------------------------------------------ flow control
    def enable_flow_control(self, settings: Any, **kw: Any) -> Any:
        """Turn on PFC (emu.core.pfc.FlowControl) in the traffic manager and the ports'
        MAC layer; returns the emu.p4.v1model.buffer.SwitchFlowControl. Frames of
        EtherType 0x8808 are then consumed before the pipeline, and the traffic manager
        learns each packet's ingress port. Off, `receive` is the plain method.
        Mode "credit": emu.p4.v1model.credit (0x88B5 updates, SwitchCreditControl)."""
        if settings.mode == "credit":
            from emu.p4.v1model.credit import install_credit
            self.flow_control = install_credit(self, settings, self._send_mac_frame, **kw)
            return self.flow_control
        from emu.p4.v1model.buffer import SwitchFlowControl

        fc = SwitchFlowControl(self.tm, settings, self._send_mac_frame, **kw)
        plain = self.receive
        on_mac = fc.on_mac_control

        def receive(port: int, data: bytes) -> None:
            if data[12:14] == b"\x88\x08":
                on_mac(port, data)
                return
            fc.ingress = port
            plain(port, data)

        self.receive = receive  # type: ignore[method-assign, assignment]  # frames from the wire only
        self.flow_control = fc
        return fc

    def _send_mac_frame(self, port: int, frame: bytes) -> None:
        """A frame generated by a port's MAC (PAUSE): no queue, no pipeline."""
        self._output(port, frame, _MAC_SM)

    # ------------------------------------------------------------------ data plane
    def receive(self, port: int, data: bytes, instance_type: int = 0,
                saved: dict[str, Any] | None = None, depth: int = 0) -> None:
        """A frame arrives on `port`: run ingress now (egress runs when dequeued). A
        resubmitted or recirculated packet comes back through here (`_ingress_packet`)
        with its `instance_type`, the metadata it keeps and its loop depth."""
        # The hot path: keep attribute lookups and calls to a minimum.
        try:
            if type(data) is not bytes:
                data = bytes(data)
            ps = PacketState(data)
            try:
                if instance_type:
                    sm = self._rerun_ingress(ps, data, port, instance_type, saved, depth)
                else:  # a normal packet: all of it in the generated run_ingress
                    sm = self._run_ingress(ps, data, port, self._now_ns() // 1000)
            except runtime.AssertFailed as e:
                self._assert_failed(e)
                return
            # End of ingress: clone, digest, resubmit, then multicast / drop / unicast.
            if ps.clone is not None or ps.digests or ps.resubmit is not None:
                if self._end_of_ingress_special(ps, port, data, ps.hdr, ps.meta, sm, depth):
                    return
            mgid = sm.mcast_grp
            if mgid:
                self._multicast(mgid, ps, ps.hdr, ps.meta, sm)
                return
            spec = sm.egress_spec
            if spec == self.drop_port:
                self.drops.count(port, DropReason.PIPELINE_DROP)
                return
            # A unicast packet starts egress as NORMAL, resubmitted or recirculated ones
            # too (BMv2 sets it at the end of ingress; behavioral-model#706).
            sm.instance_type = NORMAL
            self.tm.enqueue(spec, ps, ps.length, sm.priority)
        except Exception as exc:  # a bug or an unexecutable construct: drop, count
            self._packet_error(port, exc)

    # Resubmit and recirculate re-enter ingress here: not through `receive`, which flow
    # control replaces per instance to see frames arriving from the wire.
    _ingress_packet = receive

    def _restore(self, meta: Any, sm: Any, saved: dict[str, Any] | None) -> None:
        if not saved:
            return
        for path, v in saved.items():
            obj = meta if path.startswith("meta.") else sm
            parts = path.split(".")[1:]
            for p in parts[:-1]:
                obj = getattr(obj, p)
            setattr(obj, parts[-1], v)

    def _save(self, fl: str | None, meta: Any, sm: Any) -> dict[str, Any] | None:
        if fl is None:
            return None
        out: dict[str, Any] = {}
        for parts in self._fl.get(fl, ()):
            obj = meta if parts[0] == "meta" else sm
            for p in parts[1:]:
                obj = getattr(obj, p)
            out[".".join(parts)] = obj.copy() if hasattr(obj, "copy") else obj
        return out

    def _run_parser(self, ps: PacketState, data: bytes, sm: Any) -> tuple[Any, Any]:
        hdr = self._new_hdr()
        meta = ps.meta
        pk = runtime.Pkt(data)
        try:
            self._parse(pk, hdr, meta, sm, ps)
        except runtime.ParserError as e:
            if e.code is not None:
                sm.parser_error = e.code
        ps.payload = data[pk.o:]
        ps.base_len = pk.o if self._static_length else self._hdr_len(hdr)
        return hdr, meta

    def _rerun_ingress(self, ps: PacketState, data: bytes, port: int, instance_type: int,
                       saved: dict[str, Any] | None, depth: int) -> Any:
        """Parser, verify and ingress of a resubmitted or recirculated packet, with the
        metadata it keeps; its standard_metadata."""
        sm = self._new_sm()
        ps.sm = sm
        sm.ingress_port = port
        sm.instance_type = instance_type
        ps.depth = depth
        sm.packet_length = ps.length
        sm.ingress_global_timestamp = self.clock.now_ns() // 1000
        ps.meta = meta = self._new_meta()
        if saved:
            self._restore(meta, sm, saved)
        hdr, _ = self._run_parser(ps, data, sm)
        ps.hdr = hdr
        self._verify(hdr, meta, ps)
        self._ingress(hdr, meta, sm, ps)
        return sm

    def _end_of_ingress_special(self, ps: PacketState, port: int, data: bytes, hdr: Any,
                                meta: Any, sm: Any, depth: int) -> bool:
        """Clone, digests and resubmit; True when the packet is consumed (resubmitted)."""
        if ps.clone is not None and ps.clone[0] == "I2E":
            self._clone_i2e(ps, hdr, meta, sm)
        ps.clone = None
        if ps.digests:
            now = self.clock.now_ns()
            for name, recv, vals in ps.digests:
                self.digests.append(Digest(name, recv, vals, now))
        if ps.resubmit is not None:
            if depth < MAX_RESUBMIT_DEPTH:
                kept = self._save(ps.resubmit[0], meta, sm)
                self.clock.call_soon(lambda: self._ingress_packet(
                    port, data, RESUBMIT, kept, depth + 1))
            return True
        return False

    def _multicast(self, mgid: int, ps: PacketState, hdr: Any, meta: Any, sm: Any) -> None:
        for rep in self.pre.replicate(mgid):
            h2, m2, s2 = hdr.copy(), meta.copy(), sm.copy()
            s2.egress_rid = rep.instance
            s2.instance_type = REPLICATION
            self._enqueue(rep.egress_port, h2, m2, s2, ps, copy_state=True)

    def _enqueue(self, port: int, hdr: Any, meta: Any, sm: Any, ps: PacketState,
                 copy_state: bool) -> None:
        if copy_state:
            ps2 = PacketState(ps.data)
            ps2.payload = ps.payload
            ps2.base_len = ps.base_len
            ps2.length = ps.length
            ps2.depth = ps.depth
            ps = ps2
        ps.hdr, ps.meta, ps.sm = hdr, meta, sm
        ps.clone = None
        ps.recirc = None
        ps.trunc = 0
        self.tm.enqueue(port, ps, ps.length, sm.priority)

    def _clones(self, ps: PacketState, meta: Any, sm: Any
                ) -> Iterator[tuple[Replica, CloneSession, dict[str, Any] | None]]:
        """Each copy the packet's clone session makes: its replica, the session and the
        metadata the copies keep (none when the session does not exist)."""
        assert ps.clone is not None
        _, sid, fl = ps.clone
        sess = self.pre.clone_session(sid)
        if sess is None:
            return
        kept = self._save(fl, meta, sm)
        for rep in sess.replicas:
            yield rep, sess, kept

    def _clone_i2e(self, ps: PacketState, hdr: Any, meta: Any, sm: Any) -> None:
        for rep, sess, kept in self._clones(ps, meta, sm):
            # BMv2 re-parses the original packet for an ingress clone.
            cps = PacketState(ps.data)
            cps.depth = ps.depth
            cps.sm = self._new_sm()
            cps.meta = self._new_meta()
            chdr, _ = self._run_parser(cps, ps.data, cps.sm)
            # BMv2 (copy_field_list_and_set_type): after the re-parse every metadata field,
            # standard_metadata included, is reset and only the field list is copied.
            csm = cps.sm = self._new_sm()
            cmeta = cps.meta = self._new_meta()
            self._restore(cmeta, csm, kept)
            csm.instance_type = INGRESS_CLONE
            csm.packet_length = len(ps.data)
            csm.egress_rid = rep.instance
            if sess.packet_length_bytes:
                cps.trunc = sess.packet_length_bytes
            self._enqueue(rep.egress_port, chdr, cmeta, csm, cps, copy_state=False)
            cps.trunc = sess.packet_length_bytes

    def _on_dequeue(self, port: int, ps: Any, info: DequeueInfo) -> None:
        try:
            if ps.depth or ps.trunc:
                self._on_dequeue_full(port, ps, info)
                return
            try:
                # The dequeue time in us, as the traffic manager read its clock.
                data = self._run_egress(ps, port, info, info.enq_timestamp + info.deq_timedelta)
            except runtime.AssertFailed as e:
                self._assert_failed(e)
                return
            if data is None or ps.recirc is not None:
                self._after_egress_special(port, ps, data)
                return
            # _output inlined for its common case (frame handlers only): once per hop.
            if port == self.cpu_port or self.output_handlers:
                self._output(port, data, ps.sm)
                return
            out = self.port_outputs.get(port)
            if out is not None:
                out(data)
            for f in self.frame_handlers:
                f(port, data)
        except Exception as exc:  # a bug or an unexecutable construct: drop, count
            self._packet_error(port, exc)

    def _after_egress_special(self, port: int, ps: Any, data: bytes | None) -> None:
        """After egress: E2E clone, drop, checksum + deparse (when `data` is None),
        truncation, recirculation or output. The fast path calls it only for these
        cases; the full path always does."""
        hdr, meta, sm = ps.hdr, ps.meta, ps.sm
        if data is None:
            if ps.clone is not None and ps.clone[0] == "E2E":
                self._clone_e2e(ps, hdr, meta, sm)
            if sm.egress_spec == self.drop_port:
                self.drops.count(port, DropReason.PIPELINE_DROP)
                return
            ps.clone = None
            self._compute(hdr, meta, ps)
            parts: list[bytes] = []
            self._deparse(parts, hdr, ps)
            parts.append(ps.payload)
            data = b"".join(parts)
        if ps.trunc and len(data) > ps.trunc:
            data = data[: ps.trunc]
        if ps.recirc is not None:
            if ps.depth < MAX_RESUBMIT_DEPTH:
                kept = self._save(ps.recirc[0], meta, sm)
                ing = sm.ingress_port
                d = ps.depth + 1
                final = data
                self.clock.call_soon(lambda: self._ingress_packet(ing, final, RECIRC, kept, d))
            return
        self._output(port, data, sm)

    def _on_dequeue_full(self, port: int, ps: Any, info: DequeueInfo) -> None:
        hdr, meta, sm = ps.hdr, ps.meta, ps.sm
        sm.egress_port = port
        sm.egress_spec = 0
        sm.enq_timestamp = info.enq_timestamp & 0xFFFFFFFF
        sm.enq_qdepth = info.enq_qdepth
        sm.deq_timedelta = info.deq_timedelta & 0xFFFFFFFF
        sm.deq_qdepth = info.deq_qdepth
        sm.egress_global_timestamp = self.clock.now_ns() // 1000
        if self._static_length:
            sm.packet_length = ps.length
        else:
            sm.packet_length = ps.length + self._hdr_len(hdr) - ps.base_len
        try:
            self._egress(hdr, meta, sm, ps)
        except runtime.AssertFailed as e:
            self._assert_failed(e)
            return
        self._after_egress_special(port, ps, None)

    def _clone_e2e(self, ps: PacketState, hdr: Any, meta: Any, sm: Any) -> None:
        for rep, sess, kept in self._clones(ps, meta, sm):
            csm = self._new_sm()  # BMv2 resets all metadata of an egress clone
            csm.instance_type = EGRESS_CLONE
            csm.egress_rid = rep.instance
            cmeta = self._new_meta()
            self._restore(cmeta, csm, kept)
            cps = PacketState(ps.data)
            cps.payload = ps.payload
            cps.depth = ps.depth
            chdr = hdr.copy()
            cps.length = ps.length + self._hdr_len(chdr) - ps.base_len
            cps.base_len = self._hdr_len(chdr)
            self._enqueue(rep.egress_port, chdr, cmeta, csm, cps, copy_state=False)
            cps.trunc = sess.packet_length_bytes

    def _output(self, port: int, data: bytes, sm: Any) -> None:
        out = self.port_outputs.get(port)
        if out is not None:
            out(data)
        for f in self.frame_handlers:
            f(port, data)
        if port == self.cpu_port and self.packet_in_handler is not None:
            self.packet_in_handler(data)
        if self.output_handlers:
            # instance_type is read only here: a class default, slow to load per packet.
            pkt = OutputPacket(port, data, sm.instance_type, self._now_ns())
            for h in self.output_handlers:
                h(pkt)

    def _packet_error(self, port: int, exc: Exception) -> None:
        """An exception escaped the pipeline while it processed a packet: the packet is
        dropped and counted (reason "pipeline_error"), the first error of each kind and
        P4 location logged, and the switch goes on."""
        self.drops.count(port, PIPELINE_ERROR)
        self.pipeline_errors += 1
        where = self.program.location_of(exc)
        key = (type(exc).__name__, where)
        if key in self._errors_logged:
            return
        self._errors_logged.add(key)
        log.error("pipeline error at %s: %s: %s; packet dropped (further such errors are "
                  "only counted: drops reason %r)", where or "an unknown location",
                  type(exc).__name__, exc, PIPELINE_ERROR)

    def _assert_failed(self, e: Exception) -> None:
        self.assert_failures += 1
        log.error("P4 %s; packet dropped", e)
