"""P4Runtime fuzzing of the embedded switch against BMv2's simple_switch_grpc (a
maintainer's tool, not part of the tests; root, p4c and BMv2 on PATH).

Starts both switches on the same program and sends both the same random Write and Read
requests, drawn from the program's P4Info: table entries with keys from a small set of
values (so that inserts collide and modifies and deletes find their entry), sometimes
a value one bit too wide or padded with a zero byte, a ternary value outside its mask,
a range with low > high, a prefix with bits past its length, a missing priority, a
missing parameter, cookies, metadata, idle timeouts and direct counter or meter data
(also on tables without them); default entries; members and groups of action
profiles, and one-shot action sets; multicast groups and clone sessions; counter and
meter writes; reads by key, by default entry, filtered by action, cookie, metadata or
priority, and of counters and meters.

It steers clear of what BMv2's server does otherwise, where ours follows the spec
(emu/runtime/README.md, "Where the server differs from BMv2's"): no empty byte
strings, ids 0 or don't-care ranges; groups always have members that exist; no
wildcard counter writes, clone truncation, register reads or default-entry reads of
indirect tables; a read's action, cookie and metadata filters are applied here to
BMv2's answer, which ignores them. Codes BMv2 answers where the spec names another
(INVALID_ARGUMENT or UNKNOWN) count as one class with the spec's.

A finding is an update one side takes and the other refuses, a Read whose answers
differ, or a read of every table, profile and multicast group (every `--check`
operations) that differs; then both switches get their pipeline again, which clears
their state. Two errors with other codes are a note: which check comes first is each
server's own.

    python scripts/p4runtime_fuzz.py tests/runtime/p4/cp.p4 --count 2000 --seed 1

Prints each finding and note and a summary; exits 1 if anything was found.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import text_format
from google.rpc import code_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as P

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from emu.crosscheck.sides import switch_process  # noqa: E402
from emu.p4.frontend import P4Error  # noqa: E402
from emu.runtime.client import P4RuntimeClient, WriteError  # noqa: E402

U = P.Update
M = p4info_pb2.MatchField
# Codes BMv2 answers where the spec names another (ours first): one class each.
SAME = {("OUT_OF_RANGE", "INVALID_ARGUMENT"), ("FAILED_PRECONDITION", "UNKNOWN"),
        ("NOT_FOUND", "INVALID_ARGUMENT"), ("INVALID_ARGUMENT", "UNKNOWN"),
        ("PERMISSION_DENIED", "INVALID_ARGUMENT"), ("OUT_OF_RANGE", "UNKNOWN"),
        ("RESOURCE_EXHAUSTED", "UNKNOWN"), ("NOT_FOUND", "UNKNOWN")}


class Draw:
    """Random requests from one P4Info."""

    def __init__(self, info: p4info_pb2.P4Info, rng: random.Random) -> None:
        self.info, self.rng = info, rng
        self.actions = {a.preamble.id: a for a in info.actions}
        # not keyless tables (only their default entry is written): BMv2's server
        # keeps a reference to the member or group of an entry it refuses in one,
        # so that member or group can no longer be deleted
        self.tables = [t for t in info.tables if not t.is_const_table]
        # nor tables with initial entries: BMv2's server refuses every INSERT in them
        # (UNKNOWN), where the spec lets a controller add to them, and fails every read
        # of them (INTERNAL); they are left alone
        self.tables = [t for t in self.tables if not t.has_initial_entries]
        self.keyed = [t for t in self.tables if t.match_fields]
        self.profiles = list(info.action_profiles)
        self.reading = False
        self.hostile = True  # off while drawing the set-up, which both sides must take

    def _bytes(self, value: int, width: int) -> bytes:
        r = self.rng.random()
        if r < 0.02 and self.hostile:
            value = 1 << width  # one bit too wide
        n = max(1, (value.bit_length() + 7) // 8)
        if r > 0.97:
            n += 1  # a leading zero byte: allowed
        return value.to_bytes(n, "big")

    def _value(self, width: int) -> int:
        top = (1 << width) - 1
        return self.rng.choice((0, 1, 2, top, self.rng.getrandbits(width))) & top

    def _match(self, f: p4info_pb2.MatchField, fm: P.FieldMatch) -> bool:
        """Fills `fm`; False where the field is left out (a wildcard)."""
        w, rng, top = f.bitwidth, self.rng, (1 << f.bitwidth) - 1
        kind = f.match_type
        if kind != M.EXACT and kind != M.RANGE and rng.random() < 0.3:
            return False
        if kind == M.EXACT:
            fm.exact.value = self._bytes(self._value(w), w)
        elif kind == M.LPM:
            plen = rng.randint(1, w)
            value = self._value(w)
            if rng.random() < 0.9:
                value &= top ^ (top >> plen)
            fm.lpm.value, fm.lpm.prefix_len = self._bytes(value, w), plen
            if rng.random() < 0.02:
                fm.lpm.prefix_len = w + 1
        elif kind == M.TERNARY:
            mask = rng.choice((top, 1, rng.getrandbits(w) or 1))
            value = self._value(w)
            if rng.random() < 0.9:
                value &= mask
            fm.ternary.value, fm.ternary.mask = self._bytes(value, w), self._bytes(mask, w)
        elif kind == M.RANGE:
            low, high = self._value(w), self._value(w)
            if rng.random() < 0.9:
                low, high = sorted((low, high))
            if (low, high) == (0, top):
                high = top - 1 if top else 0
            fm.range.low, fm.range.high = self._bytes(low, w), self._bytes(high, w)
        else:
            fm.optional.value = self._bytes(self._value(w), w)
        fm.field_id = f.id
        return True

    def _action(self, refs: Any, out: P.Action) -> None:
        ref = self.rng.choice(refs)
        out.action_id = ref.id
        for p in self.actions[ref.id].params:
            if self.rng.random() < 0.98 or not self.hostile:
                out.params.add(param_id=p.id,
                               value=self._bytes(self._value(p.bitwidth), p.bitwidth))

    def table_entry(self, t: p4info_pb2.Table, with_action: bool) -> P.Entity:
        e = P.Entity()
        te = e.table_entry
        te.table_id = t.preamble.id
        for f in t.match_fields:
            fm = P.FieldMatch()
            if self._match(f, fm):
                te.match.append(fm)
        if any(f.match_type in (M.TERNARY, M.RANGE, M.OPTIONAL) for f in t.match_fields):
            # (a read by key without priority: ours filters on the key alone, as the
            # spec's wildcard priority has it; BMv2's server refuses it)
            missing = self.rng.random() < 0.03 and not self.reading
            te.priority = self.rng.choice((1, 2, 3, 0 if missing else 1))
        if with_action and self.rng.random() < 0.1:
            te.controller_metadata = self.rng.randint(1, 2)
        if with_action and self.rng.random() < 0.1:
            te.metadata = bytes([self.rng.randint(1, 2)])
        if with_action and t.idle_timeout_behavior and self.rng.random() < 0.1:
            te.idle_timeout_ns = self.rng.choice((1, 10**9, 10**12))
        if with_action and self.rng.random() < 0.1:
            self._direct_resources(t, te)
        if with_action:
            if t.implementation_id and self.rng.random() < 0.2:
                self._one_shot(t, te.action.action_profile_action_set)
            elif t.implementation_id:
                if self.rng.random() < 0.5:
                    te.action.action_profile_member_id = self.rng.randint(1, 4)
                else:
                    te.action.action_profile_group_id = self.rng.randint(1, 3)
            else:
                self._action(t.action_refs, te.action.action)
        return e

    def _one_shot(self, t: p4info_pb2.Table, out: P.ActionProfileActionSet) -> None:
        """One action, or (behind a selector) one to three with weights."""
        prof = next(p for p in self.profiles if p.preamble.id == t.implementation_id)
        for _ in range(self.rng.randint(1, 3) if prof.with_selector else 1):
            a = out.action_profile_actions.add(weight=self.rng.choice((1, 1, 2)))
            self._action(t.action_refs, a.action)

    def _direct_resources(self, t: p4info_pb2.Table, te: P.TableEntry) -> None:
        """counter_data or meter_config, also on tables without them (an error)."""
        if self.rng.random() < 0.5:
            te.counter_data.packet_count = self.rng.randint(0, 5)
            te.counter_data.byte_count = self.rng.randint(0, 500)
        else:
            cir, pir = self._rates()
            te.meter_config.cir, te.meter_config.pir = cir, pir
            te.meter_config.cburst, te.meter_config.pburst = \
                self.rng.randint(1, 100), self.rng.randint(1, 100)

    def _rates(self) -> tuple[int, int]:
        """cir <= pir, whole units per µs: BMv2's server swaps a meter's cir > pir (and
        for a direct meter answers UNKNOWN but keeps the entry, whose table then fails
        every read, INTERNAL), and reads other rates back rounded down (511 as 510)."""
        cir, pir = sorted((self.rng.randint(1, 1000), self.rng.randint(1, 1000)))
        return cir * 10**6, pir * 10**6

    def default_entry(self, t: p4info_pb2.Table) -> P.Entity:
        e = P.Entity()
        te = e.table_entry
        te.table_id, te.is_default_action = t.preamble.id, True
        self._action(t.action_refs, te.action.action)
        return e

    def member(self, prof: p4info_pb2.ActionProfile, with_action: bool) -> P.Entity:
        e = P.Entity()
        m = e.action_profile_member
        m.action_profile_id, m.member_id = prof.preamble.id, self.rng.randint(1, 4)
        if with_action:
            table = next(t for t in self.info.tables if t.implementation_id == prof.preamble.id)
            self._action(table.action_refs, m.action)
        return e

    def group(self, prof: p4info_pb2.ActionProfile, with_members: bool) -> P.Entity:
        e = P.Entity()
        g = e.action_profile_group
        g.action_profile_id, g.group_id = prof.preamble.id, self.rng.randint(1, 3)
        if with_members:  # never empty (see `setup`)
            for mid in self.rng.sample(range(1, 5), self.rng.randint(1, 3)):
                g.members.add(member_id=mid, weight=self.rng.choice((1, 1, 2)))
        return e

    def _replicas(self, out: Any, most: int) -> None:
        for port in self.rng.sample(range(1, 5), self.rng.randint(1, most)):
            out.add(egress_port=port, instance=self.rng.choice((0, 1)))

    def multicast(self, with_replicas: bool) -> P.Entity:
        e = P.Entity()
        mg = e.packet_replication_engine_entry.multicast_group_entry
        mg.multicast_group_id = self.rng.randint(1, 3)
        if with_replicas and self.rng.random() < 0.9:  # else an empty group
            self._replicas(mg.replicas, 3)
        return e

    def setup(self) -> list[P.Update]:
        """Members 1..4 of each selector, which the draws only modify: BMv2's server
        leaves a group behind when an INSERT names a missing member, and refuses an
        entry naming an empty group, which the spec allows; so groups here always
        have members that exist."""
        out = []
        self.hostile = False  # (a too-wide parameter here stopped a run before it began)
        for prof in self.profiles:
            if prof.with_selector:
                for mid in range(1, 5):
                    ent = self.member(prof, True)
                    ent.action_profile_member.member_id = mid
                    out.append(U(type=U.INSERT, entity=ent))
        self.hostile = True
        return out

    def clone_session(self, with_replicas: bool) -> P.Entity:
        e = P.Entity()
        cs = e.packet_replication_engine_entry.clone_session_entry
        cs.session_id = self.rng.randint(1, 3)
        if with_replicas:
            self._replicas(cs.replicas, 2)
        return e  # (no packet_length_bytes: BMv2's server has no truncation)

    def indexed(self) -> P.Entity:
        """A counter's data or a meter's config at an index, sometimes past the size
        (not every cell: BMv2's server has no such wildcard writes)."""
        e = P.Entity()
        kinds = [k for k in ("counters", "meters") if getattr(self.info, k)]
        kind = self.rng.choice(kinds)
        obj = self.rng.choice(getattr(self.info, kind))
        if kind == "counters":
            ce = e.counter_entry
            ce.counter_id = obj.preamble.id
            # only what the counter counts: BMv2's server drops the other field, ours
            # keeps it (the spec does not tell counter units apart)
            unit = obj.spec.unit
            if unit != p4info_pb2.CounterSpec.BYTES:
                ce.data.packet_count = self.rng.randint(0, 9)
            if unit != p4info_pb2.CounterSpec.PACKETS:
                ce.data.byte_count = self.rng.randint(0, 900)
        else:
            ce = e.meter_entry
            ce.meter_id = obj.preamble.id
            ce.config.cir, ce.config.pir = self._rates()
            ce.config.cburst, ce.config.pburst = self.rng.randint(1, 9), self.rng.randint(1, 9)
        ce.index.index = self.rng.randint(0, obj.size)
        return e

    def update(self) -> P.Update:
        typ = self.rng.choice((U.INSERT, U.INSERT, U.INSERT, U.MODIFY, U.DELETE))
        full = typ != U.DELETE or self.rng.random() < 0.5
        r = self.rng.random()
        if self.profiles and r < 0.3:
            prof = self.rng.choice(self.profiles)
            if prof.with_selector and self.rng.random() < 0.5:
                ent = self.group(prof, full)
            else:
                if prof.with_selector:
                    typ, full = U.MODIFY, True
                ent = self.member(prof, full)
        elif r < 0.36:
            ent = self.multicast(full)
        elif r < 0.38:
            ent = self.clone_session(full)
        elif r < 0.41 and (self.info.counters or self.info.meters):
            typ, ent = U.MODIFY, self.indexed()
        elif self.keyed and r >= 0.45:
            ent = self.table_entry(self.rng.choice(self.keyed), full)
        elif self.tables:
            typ, ent = U.MODIFY, self.default_entry(self.rng.choice(self.tables))
        else:
            ent = self.multicast(full)
        return U(type=typ, entity=ent)

    def read(self) -> P.Entity:
        self.reading = True
        try:
            return self._read()
        finally:
            self.reading = False

    def _read(self) -> P.Entity:
        e = P.Entity()
        # Not registers: BMv2's server answers their reads UNIMPLEMENTED.
        kinds = [k for k in ("counters", "meters") if getattr(self.info, k)]
        if not kinds and not self.tables:
            return self.multicast(False)
        if self.tables and (not kinds or self.rng.random() < 0.5):
            t = self.rng.choice(self.tables)
            r = self.rng.random()
            if r < 0.5:
                return self.table_entry(t, False)
            if r < 0.7 and not t.implementation_id and not t.const_default_action_id:
                # (a const default entry: ours reads it with is_const, BMv2's without;
                # an indirect table's default entry: ours reads a const NoAction, as the
                # spec has it, BMv2's no action)
                return self.default_entry(t)
            # a filtered wildcard read: by action, cookie or metadata
            e.table_entry.table_id = t.preamble.id
            if r < 0.8 and not t.implementation_id:
                e.table_entry.action.action.action_id = self.rng.choice(t.action_refs).id
            elif r < 0.9:
                e.table_entry.controller_metadata = self.rng.randint(1, 2)
            else:
                e.table_entry.metadata = bytes([self.rng.randint(1, 2)])
            return e
        kind = self.rng.choice(kinds)
        obj = self.rng.choice(getattr(self.info, kind))
        entry = getattr(e, kind[:-1] + "_entry")
        setattr(entry, kind[:-1] + "_id", obj.preamble.id)
        if self.rng.random() < 0.7:
            entry.index.index = self.rng.randint(0, obj.size)
        return e

    def everything(self) -> list[P.Entity]:
        out = []
        for t in self.tables:
            e = P.Entity()
            e.table_entry.table_id = t.preamble.id
            out.append(e)
        for prof in self.profiles:
            for kind in ("action_profile_member", "action_profile_group"):
                e = P.Entity()
                getattr(e, kind).action_profile_id = prof.preamble.id
                out.append(e)
        e = P.Entity()
        e.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = 0
        out.append(e)
        return out


def _write(c: P4RuntimeClient, updates: list[P.Update]) -> list[str]:
    try:
        c.write(updates)
    except WriteError as e:
        if e.errors:
            return [code_pb2.Code.Name(code) for code, _ in e.errors]
        return [e.code.name] * len(updates)
    return ["OK"] * len(updates)


def _text(got: list[P.Entity]) -> str:
    for x in got:  # the order of a group's replicas or members carries no meaning
        if x.HasField("packet_replication_engine_entry"):
            items = x.packet_replication_engine_entry.multicast_group_entry.replicas
        elif x.HasField("action_profile_group"):
            items = x.action_profile_group.members
        else:
            continue
        ordered = sorted(items, key=lambda r: r.SerializeToString(deterministic=True))
        del items[:]
        items.extend(ordered)
    return "\n".join(sorted(repr(text_format.MessageToString(x, as_one_line=True))
                            for x in got))


# BMv2's server answers a Read in one message: past the gRPC client's 4 MB it cannot
# be received (a wildcard read of a counter of 262,144 cells), where ours streams it.
TOO_LARGE = "bmv2: response over the client's message limit"


def _read(c: P4RuntimeClient, ents: list[P.Entity]) -> str:
    try:
        return _text(c.read(ents))
    except grpc.RpcError as e:
        if (e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                and "larger than max" in (e.details() or "")):
            return TOO_LARGE
        return f"error {e.code().name}"


def _read_bmv2(c: P4RuntimeClient, q: P.Entity) -> str:
    """BMv2's server ignores a read's action, controller_metadata and metadata filters,
    and without a key its priority filter: read without them and filter here (spec,
    Wildcard Reads)."""
    te = q.table_entry
    by_priority = te.priority and not te.match
    if not q.HasField("table_entry") or te.is_default_action or not (
            te.HasField("action") or te.controller_metadata or te.metadata or by_priority):
        return _read(c, [q])
    plain = P.Entity()
    plain.CopyFrom(q)
    pt = plain.table_entry
    pt.ClearField("action"), pt.ClearField("controller_metadata"), pt.ClearField("metadata")
    if by_priority:
        pt.ClearField("priority")
    try:
        got = c.read([plain])
    except grpc.RpcError as e:
        return f"error {e.code().name}"
    keep = [x for x in got
            if (not te.HasField("action")
                or x.table_entry.action.action.action_id == te.action.action.action_id)
            and (not te.controller_metadata
                 or x.table_entry.controller_metadata == te.controller_metadata)
            and (not te.metadata or x.table_entry.metadata == te.metadata)
            and (not te.priority or x.table_entry.priority == te.priority)]
    return _text(keep)


def _read_all(c: P4RuntimeClient, queries: list[P.Entity]) -> list[str]:
    """Each query on its own, so that an error names its query."""
    out: list[str] = []
    for q in queries:
        got = _read(c, [q])
        if got.startswith("error "):
            got += " for " + text_format.MessageToString(q, as_one_line=True)
        out.extend(filter(None, got.splitlines()))
    return out


def _show(ours: str, bmv2: str) -> None:
    """The lines of two answers that only one of them has."""
    a, b = Counter(ours.splitlines()), Counter(bmv2.splitlines())
    for side, only in (("embedded", a - b), ("bmv2", b - a)):
        print(f"  only {side}:", *sorted(only), sep="\n    ")


def _agree(ours: str, bmv2: str) -> bool:
    return ours == bmv2 or (ours, bmv2) in SAME


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("program", type=Path)
    ap.add_argument("--count", type=int, default=500, help="operations (default 500)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--check", type=int, default=25,
                    help="read back everything every N operations (default 25)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    try:
        return _fuzz(args, rng)
    except P4Error as e:
        print(f"p4runtime_fuzz: {e}", file=sys.stderr)
        return 2


def _fuzz(args: argparse.Namespace, rng: random.Random) -> int:
    found = notes = 0
    with tempfile.TemporaryDirectory() as tmp, \
            switch_process("embedded", args.program.resolve(), Path(tmp)) as our_side, \
            switch_process("bmv2", args.program.resolve(), Path(tmp)) as bmv2_side:
        ours, bmv2 = our_side.client, bmv2_side.client
        draw = Draw(ours.p4info, rng)

        def reset() -> None:
            for side in (our_side, bmv2_side):
                side.client.set_pipeline(side.client.p4info, side.pipe.device_config())
                side.client.write(first)

        first = draw.setup()
        if first:
            for c in (ours, bmv2):
                c.write(first)

        for n in range(1, args.count + 1):
            if rng.random() < 0.8:
                updates = [draw.update() for _ in range(rng.choice((1, 1, 1, 2, 4)))]
                a, b = _write(ours, updates), _write(bmv2, updates)
                taken = [(x == "OK") != (y == "OK") for x, y in zip(a, b, strict=True)]
                if not all(map(_agree, a, b)):
                    # an update one side takes is a finding; two errors with other
                    # codes are a note (which check comes first is each server's own)
                    found += any(taken)
                    notes += not any(taken)
                    print(f"[{n}] write{'' if any(taken) else ' (codes)'}: embedded {a}, "
                          f"bmv2 {b}")
                    for u in updates:
                        print("    " + text_format.MessageToString(u, as_one_line=True))
                    if any(taken):
                        reset()
            else:
                q = [draw.read()]
                a_s, b_s = _read(ours, q), _read_bmv2(bmv2, q[0])
                if b_s == TOO_LARGE:
                    notes += 1  # nothing of BMv2's to compare with
                    print(f"[{n}] read {text_format.MessageToString(q[0], as_one_line=True)}"
                          f": {TOO_LARGE}")
                elif not _agree(a_s.removeprefix("error "), b_s.removeprefix("error ")):
                    found += 1
                    print(f"[{n}] read {text_format.MessageToString(q[0], as_one_line=True)}")
                    _show(a_s, b_s)
            if n % args.check == 0:
                a_s = "\n".join(sorted(_read_all(ours, draw.everything())))
                # BMv2's server may list a member twice (once per group it is in)
                b_s = "\n".join(sorted(set(_read_all(bmv2, draw.everything()))))
                if a_s != b_s:
                    found += 1
                    print(f"[{n}] state differs")
                    _show(a_s, b_s)
                    reset()
    print(f"{args.count} operations, {found} findings, {notes} code differences or reads "
          "BMv2 cannot answer")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
