"""Table writes, reads and lookups for every match kind."""

from __future__ import annotations

import pytest

from emu.p4.tables import (
    KEEP,
    NO_ACTION,
    ActionCall,
    ActionScope,
    ActionSpec,
    AlreadyExists,
    CounterCell,
    ErrorKind,
    Exact,
    InitialEntry,
    InvalidArgument,
    KeyField,
    Lpm,
    MatchKind,
    NotFound,
    Optional,
    PermissionDenied,
    Range,
    ResourceExhausted,
    Table,
    Ternary,
)

FWD = "fwd"


def fwd(port: int) -> ActionCall:
    return ActionCall(FWD, (port,))


def exact_table(**kw: object) -> Table:
    return Table("t", [KeyField("a", MatchKind.EXACT, 8), KeyField("b", MatchKind.EXACT, 16)],
                 **kw)  # type: ignore[arg-type]


def lpm_table(**kw: object) -> Table:
    return Table("routes", [KeyField("dst", MatchKind.LPM, 32)], **kw)  # type: ignore[arg-type]


def ip(s: str) -> int:
    a, b, c, d = (int(x) for x in s.split("."))
    return a << 24 | b << 16 | c << 8 | d


# -- exact --------------------------------------------------------------------

def test_exact_hit_and_miss() -> None:
    t = exact_table()
    t.insert([1, 2], fwd(3))
    t.insert([Exact(1), Exact(3)], fwd(4))
    assert t.apply((1, 2)).action == fwd(3)
    assert t.apply((1, 3)).action == fwd(4)
    miss = t.apply((2, 2))
    assert not miss.hit and miss.is_default and miss.action == NO_ACTION
    assert t.lookup((2, 2)) is None
    assert t.lookup((1, 2)) is t.get([1, 2])


def test_exact_duplicate_and_missing() -> None:
    t = exact_table()
    t.insert([1, 2], fwd(3))
    with pytest.raises(AlreadyExists) as ei:
        t.insert([1, 2], fwd(4))
    assert ei.value.kind is ErrorKind.ALREADY_EXISTS and ei.value.kind.grpc_code == 6
    with pytest.raises(NotFound) as nf:
        t.delete([1, 3])
    assert nf.value.kind is ErrorKind.NOT_FOUND
    with pytest.raises(NotFound):
        t.modify([9, 9], action=fwd(1))
    t.delete([1, 2])
    assert t.lookup((1, 2)) is None and len(t) == 0


def test_priority_rules() -> None:
    t = exact_table()
    with pytest.raises(InvalidArgument):
        t.insert([1, 2], fwd(3), priority=5)  # no ternary/range/optional: must be 0
    tt = Table("acl", [KeyField("a", MatchKind.TERNARY, 8)])
    with pytest.raises(InvalidArgument):
        tt.insert([Ternary(1, 1)], fwd(1))  # priority 0 not valid here
    with pytest.raises(InvalidArgument):
        tt.insert([Ternary(1, 1)], fwd(1), priority=2**31)
    tt.insert([Ternary(1, 1)], fwd(1), priority=1)
    # Same match, other priority: a different entry (P4Runtime identity is match+priority).
    tt.insert([Ternary(1, 1)], fwd(2), priority=2)
    assert len(tt) == 2
    with pytest.raises(AlreadyExists):
        tt.insert([Ternary(3, 1)], fwd(2), priority=2)  # canonicalises to the same match
    assert tt.get([Ternary(1, 1)], 1).action == fwd(1)
    with pytest.raises(NotFound):
        tt.get([Ternary(1, 1)], 3)


def test_table_size_limit() -> None:
    t = exact_table(size=2)
    t.insert([1, 1], fwd(1))
    t.insert([1, 2], fwd(1))
    with pytest.raises(ResourceExhausted) as ei:
        t.insert([1, 3], fwd(1))
    assert ei.value.kind is ErrorKind.RESOURCE_EXHAUSTED
    t.delete([1, 1])
    t.insert([1, 3], fwd(1))


def test_keyless_table_rejects_entries_and_uses_default() -> None:
    t = Table("k", [], default_action=fwd(7))
    with pytest.raises(InvalidArgument):
        t.insert([], fwd(1))
    assert t.apply(()).action == fwd(7)


# -- lpm ----------------------------------------------------------------------

def test_lpm_longest_prefix_wins() -> None:
    t = lpm_table()
    t.insert([Lpm(0, 0)], fwd(0))
    t.insert([Lpm(ip("10.0.0.0"), 8)], fwd(8))
    t.insert([Lpm(ip("10.1.0.0"), 16)], fwd(16))
    t.insert([Lpm(ip("10.1.2.0"), 24)], fwd(24))
    t.insert([Lpm(ip("10.1.2.3"), 32)], fwd(32))
    assert t.apply((ip("10.1.2.3"),)).action == fwd(32)
    assert t.apply((ip("10.1.2.4"),)).action == fwd(24)
    assert t.apply((ip("10.1.3.4"),)).action == fwd(16)
    assert t.apply((ip("10.2.3.4"),)).action == fwd(8)
    assert t.apply((ip("11.2.3.4"),)).action == fwd(0)
    t.delete([Lpm(ip("10.1.2.0"), 24)])
    assert t.apply((ip("10.1.2.4"),)).action == fwd(16)
    t.delete([Lpm(0, 0)])
    assert not t.apply((ip("11.2.3.4"),)).hit


def test_lpm_results_follow_every_write_after_a_lookup() -> None:
    # An lpm table keeps its results by key until the next write: each kind of write
    # after a lookup of the same key must show in the next lookup.
    t = lpm_table()
    key = (ip("10.1.2.3"),)
    assert not t.apply(key).hit
    t.insert([Lpm(ip("10.0.0.0"), 8)], fwd(8))
    assert t.apply(key).action == fwd(8)
    t.insert([Lpm(ip("10.1.2.0"), 24)], fwd(24))  # longer: wins from now on
    assert t.apply(key).action == fwd(24)
    t.modify([Lpm(ip("10.1.2.0"), 24)], action=fwd(25))
    assert t.apply(key).action == fwd(25)
    t.delete([Lpm(ip("10.1.2.0"), 24)])
    assert t.apply(key).action == fwd(8)
    t.clear()
    assert not t.apply(key).hit


def test_lpm_kept_results_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from emu.p4.tables import matchers

    monkeypatch.setattr(matchers._Memo, "MAX_KEYS", 4)
    t = lpm_table()
    t.insert([Lpm(ip("10.0.0.0"), 8)], fwd(8))
    for i in range(10):
        assert t.apply((ip("10.0.0.0") + i,)).action == fwd(8)
        assert not t.apply((ip("11.0.0.0") + i,)).hit
    assert len(t._matcher._memo) <= 4  # type: ignore[attr-defined]


def test_lpm_duplicate_after_canonicalisation() -> None:
    t = lpm_table()
    t.insert([Lpm(ip("10.1.2.3"), 8)], fwd(1))
    with pytest.raises(AlreadyExists):
        t.insert([Lpm(ip("10.0.0.0"), 8)], fwd(2))
    assert t.entries()[0].match == (Lpm(ip("10.0.0.0"), 8),)


def test_lpm_with_exact_fields() -> None:
    t = Table("vrf", [KeyField("vrf", MatchKind.EXACT, 8), KeyField("dst", MatchKind.LPM, 32)])
    t.insert([1, Lpm(ip("10.0.0.0"), 8)], fwd(1))
    t.insert([2, Lpm(ip("10.1.0.0"), 16)], fwd(2))
    t.insert([2, Lpm(ip("10.0.0.0"), 8)], fwd(3))
    assert t.apply((1, ip("10.1.1.1"))).action == fwd(1)
    assert t.apply((2, ip("10.1.1.1"))).action == fwd(2)
    assert t.apply((2, ip("10.2.1.1"))).action == fwd(3)
    assert not t.apply((3, ip("10.1.1.1"))).hit
    t.delete([1, Lpm(ip("10.0.0.0"), 8)])
    assert not t.apply((1, ip("10.1.1.1"))).hit


def test_two_lpm_fields_need_a_priority_kind() -> None:
    with pytest.raises(InvalidArgument):
        Table("bad", [KeyField("a", MatchKind.LPM, 8), KeyField("b", MatchKind.LPM, 8)])
    # With a ternary field it is a priority table; lpm fields are masks there.
    t = Table("ok", [KeyField("a", MatchKind.LPM, 8), KeyField("b", MatchKind.LPM, 8),
                     KeyField("c", MatchKind.TERNARY, 8)])
    t.insert([Lpm(0x10, 4), None, None], fwd(1), priority=10)
    t.insert([Lpm(0x10, 8), None, None], fwd(2), priority=5)
    # Priority wins over prefix length (BMv2 ternary semantics).
    assert t.apply((0x10, 0, 0)).action == fwd(1)


# -- ternary / range / optional ----------------------------------------------------

def test_ternary_highest_priority_wins() -> None:
    t = Table("acl", [KeyField("a", MatchKind.TERNARY, 16)])
    t.insert([Ternary(0x1100, 0xff00)], fwd(1), priority=10)
    t.insert([Ternary(0x1111, 0xffff)], fwd(2), priority=5)
    t.insert([None], fwd(3), priority=1)
    assert t.apply((0x1111,)).action == fwd(1)
    assert t.apply((0x1211,)).action == fwd(3)
    t.modify([Ternary(0x1111, 0xffff)], 5, action=fwd(9))
    assert t.apply((0x1111,)).action == fwd(1)
    t.delete([Ternary(0x1100, 0xff00)], 10)
    assert t.apply((0x1111,)).action == fwd(9)
    assert t.apply((0x1100,)).action == fwd(3)


def test_equal_priorities_first_added_wins() -> None:
    t = Table("acl", [KeyField("a", MatchKind.TERNARY, 8)])
    t.insert([Ternary(0x10, 0xf0)], fwd(1), priority=5)
    t.insert([Ternary(0x01, 0x0f)], fwd(2), priority=5)
    assert t.apply((0x11,)).action == fwd(1)
    t2 = Table("acl", [KeyField("a", MatchKind.TERNARY, 8)])
    t2.insert([Ternary(0x01, 0x0f)], fwd(2), priority=5)
    t2.insert([Ternary(0x10, 0xf0)], fwd(1), priority=5)
    assert t2.apply((0x11,)).action == fwd(2)


def test_equal_priority_tie_uses_lowest_free_handle_like_bmv2() -> None:
    t = Table("acl", [KeyField("a", MatchKind.TERNARY, 8)])
    t.insert([Ternary(0x00, 0x00)], fwd(0), priority=1)  # handle 0
    t.insert([Ternary(0x10, 0xf0)], fwd(1), priority=5)  # handle 1
    t.insert([Ternary(0x01, 0x0f)], fwd(2), priority=5)  # handle 2
    t.delete([None], 1)  # frees handle 0
    e = t.insert([Ternary(0x11, 0xff)], fwd(3), priority=5)  # reuses handle 0
    assert e.handle == 0
    assert t.apply((0x11,)).action == fwd(3)


def test_smallest_priority_wins_when_configured() -> None:
    t = Table("acl", [KeyField("a", MatchKind.TERNARY, 8)], largest_priority_wins=False)
    t.insert([Ternary(0x10, 0xf0)], fwd(1), priority=10)
    t.insert([None], fwd(2), priority=20)
    assert t.apply((0x11,)).action == fwd(1)


def test_range_match() -> None:
    t = Table("ports", [KeyField("p", MatchKind.RANGE, 16)])
    t.insert([Range(1000, 2000)], fwd(1), priority=2)
    t.insert([Range(1500, 1600)], fwd(2), priority=3)
    t.insert([Range(0, 0xffff)], fwd(3), priority=1)
    assert t.apply((999,)).action == fwd(3)
    assert t.apply((1000,)).action == fwd(1)
    assert t.apply((1550,)).action == fwd(2)
    assert t.apply((1600,)).action == fwd(2)
    assert t.apply((2000,)).action == fwd(1)
    assert t.apply((2001,)).action == fwd(3)


def test_range_in_same_bucket_falls_through_to_lower_priority() -> None:
    t = Table("m", [KeyField("e", MatchKind.EXACT, 8), KeyField("p", MatchKind.RANGE, 16)])
    t.insert([1, Range(10, 20)], fwd(1), priority=9)
    t.insert([1, Range(0, 100)], fwd(2), priority=5)
    assert t.apply((1, 15)).action == fwd(1)
    assert t.apply((1, 50)).action == fwd(2)
    assert not t.apply((2, 15)).hit


def test_optional_match() -> None:
    t = Table("o", [KeyField("port", MatchKind.OPTIONAL, 9), KeyField("et", MatchKind.EXACT, 16)])
    t.insert([Optional(3), 0x800], fwd(1), priority=10)
    t.insert([None, 0x800], fwd(2), priority=5)
    assert t.apply((3, 0x800)).action == fwd(1)
    assert t.apply((4, 0x800)).action == fwd(2)
    assert not t.apply((3, 0x86dd)).hit


def test_mixed_key() -> None:
    t = Table("mix", [KeyField("e", MatchKind.EXACT, 8), KeyField("l", MatchKind.LPM, 16),
                      KeyField("t", MatchKind.TERNARY, 8), KeyField("r", MatchKind.RANGE, 8),
                      KeyField("o", MatchKind.OPTIONAL, 4)])
    t.insert([1, Lpm(0xab00, 8), Ternary(0x0f, 0x0f), Range(5, 6), None], fwd(1), priority=3)
    t.insert([1, Lpm(0xab00, 8), None, None, 2], fwd(2), priority=2)
    t.insert([1, None, None, None, None], fwd(3), priority=1)
    assert t.apply((1, 0xab12, 0xff, 5, 2)).action == fwd(1)
    assert t.apply((1, 0xab12, 0xff, 7, 2)).action == fwd(2)
    assert t.apply((1, 0xab12, 0xff, 7, 3)).action == fwd(3)
    assert not t.apply((2, 0xab12, 0xff, 5, 2)).hit


def test_selector_fields_are_excluded_from_match() -> None:
    t = Table("ecmp", [KeyField("dst", MatchKind.LPM, 32), KeyField("src", MatchKind.SELECTOR, 32),
                       KeyField("sport", MatchKind.SELECTOR, 16)])
    assert [f.name for f in t.match_fields] == ["dst"]
    assert [f.name for f in t.selector_fields] == ["src", "sport"]
    t.insert([Lpm(ip("10.0.0.0"), 8)], fwd(1))
    assert t.apply((ip("10.1.1.1"),)).action == fwd(1)


# -- const, default, actions, metadata ------------------------------------------------

def test_const_table_rejects_writes() -> None:
    t = Table("c", [KeyField("a", MatchKind.TERNARY, 8)], is_const=True)
    t.add_initial_entries([InitialEntry([Ternary(0x10, 0xf0)], fwd(1)),
                           InitialEntry([None], fwd(2))], const_entries=True)
    # First entry has the highest priority.
    assert [e.priority for e in t.entries()] == [2, 1]
    assert t.apply((0x11,)).action == fwd(1)
    assert t.apply((0x21,)).action == fwd(2)
    with pytest.raises(PermissionDenied) as ei:
        t.insert([Ternary(1, 1)], fwd(3), priority=5)
    assert ei.value.kind is ErrorKind.PERMISSION_DENIED
    with pytest.raises(PermissionDenied):
        t.delete([None], 1)
    with pytest.raises(PermissionDenied):
        t.modify([None], 1, action=fwd(5))
    # Direct resources of const entries may change.
    t.modify([None], 1, counter=(5, 500))
    assert t.get([None], 1).counter == CounterCell(5, 500)


def test_initial_entries_mixed_const() -> None:
    t = Table("i", [KeyField("a", MatchKind.EXACT, 8)])
    t.add_initial_entries([InitialEntry([1], fwd(1), is_const=True), InitialEntry([2], fwd(2))],
                          const_entries=False)
    assert [e.priority for e in t.entries()] == [0, 0]
    with pytest.raises(PermissionDenied):
        t.delete([1])
    t.delete([2])
    t.insert([3], fwd(3))
    with pytest.raises(InvalidArgument):
        t.add_initial_entries([InitialEntry([4], fwd(1), priority=3)], const_entries=False)


def test_default_action_change_and_reset() -> None:
    t = exact_table(default_action=fwd(9))
    d = t.default_entry
    assert t.apply((0, 0)) is d and d.action == fwd(9)
    t.set_default_action(fwd(5), metadata=b"x")
    assert t.apply((0, 0)).action == fwd(5)
    assert t.default_entry.metadata == b"x"
    t.reset_default_action()
    assert t.apply((0, 0)).action == fwd(9) and d.metadata == b""
    c = exact_table(default_action=fwd(9), const_default_action=True)
    with pytest.raises(PermissionDenied):
        c.set_default_action(fwd(1))
    with pytest.raises(PermissionDenied):
        c.reset_default_action()


def test_action_specs_validate_and_normalise() -> None:
    specs = [ActionSpec("MyIngress.fwd", 1001, (9,)),
             ActionSpec("MyIngress.drop", 1002, ()),
             ActionSpec("MyIngress.only_default", 1003, (), ActionScope.DEFAULT_ONLY),
             ActionSpec("MyIngress.only_table", 1004, (), ActionScope.TABLE_ONLY)]
    t = Table("t", [KeyField("a", MatchKind.EXACT, 8)], actions=specs)
    e = t.insert([1], ActionCall(1001, (3,)))
    assert e.action == ActionCall("MyIngress.fwd", (3,))
    with pytest.raises(InvalidArgument):
        t.insert([2], ActionCall("nope"))
    with pytest.raises(InvalidArgument):
        t.insert([2], ActionCall(1001, (512,)))  # does not fit in 9 bits
    with pytest.raises(InvalidArgument):
        t.insert([2], ActionCall(1001, ()))
    with pytest.raises(PermissionDenied):
        t.insert([2], ActionCall("MyIngress.only_default"))
    with pytest.raises(PermissionDenied):
        t.set_default_action(ActionCall("MyIngress.only_table"))
    t.set_default_action(ActionCall(1003))
    assert t.default_entry.action == ActionCall("MyIngress.only_default")
    t.set_default_action(NO_ACTION)  # always allowed
    assert [x.action for x in t.read(action=1001)] == [ActionCall("MyIngress.fwd", (3,))]


def test_read_order_and_filters() -> None:
    t = Table("acl", [KeyField("a", MatchKind.TERNARY, 8)])
    t.insert([Ternary(1, 0xff)], fwd(1), priority=3, metadata=b"m1", controller_metadata=7)
    t.insert([Ternary(2, 0xff)], ActionCall("drop"), priority=2)
    t.insert([Ternary(3, 0xff)], fwd(3), priority=3)
    t.modify([Ternary(1, 0xff)], 3, action=fwd(11))  # keeps its position
    assert [e.action for e in t.entries()] == [fwd(11), ActionCall("drop"), fwd(3)]
    assert [e.action for e in t] == [fwd(11), ActionCall("drop"), fwd(3)]
    assert len(t.read(priority=3)) == 2
    assert [e.action for e in t.read(action="drop")] == [ActionCall("drop")]
    assert [e.metadata for e in t.read(metadata=b"m1")] == [b"m1"]
    assert len(t.read(controller_metadata=7)) == 1
    assert len(t.read([Ternary(2, 0xff)])) == 1
    assert t.read([Ternary(9, 0xff)]) == []


def test_modify_fields_and_keep() -> None:
    t = exact_table()
    t.insert([1, 1], fwd(1), metadata=b"a", counter=(2, 200), meter_config="cfg")
    e = t.modify([1, 1], metadata=b"b")
    assert e.action == fwd(1) and e.metadata == b"b" and e.counter == CounterCell(2, 200)
    assert e.meter_config == "cfg"
    t.modify([1, 1], action=fwd(2), counter=CounterCell(0, 0), meter_config=None)
    assert e.action == fwd(2) and e.counter == CounterCell() and e.meter_config is None
    with pytest.raises(InvalidArgument):
        t.modify([1, 1], action=None)  # no target at all
    assert t.modify([1, 1], action=KEEP).action == fwd(2)


def test_direct_counter_cells() -> None:
    t = exact_table()
    t.insert([1, 1], fwd(1))
    e = t.apply((1, 1))
    e.counter.count(100)
    e.counter.count(60)
    assert t.get([1, 1]).counter == CounterCell(2, 160)
    t.apply((0, 0)).counter.count(10)  # the default entry has its own cell
    assert t.default_entry.counter.packets == 1
    t.reset_counters()
    assert t.get([1, 1]).counter == CounterCell() and t.default_entry.counter.packets == 0


def test_strict_mode_for_p4runtime() -> None:
    t = lpm_table()
    with pytest.raises(InvalidArgument):
        t.insert([Lpm(ip("10.1.0.0"), 8)], fwd(1), strict=True)
    t.insert({"dst": Lpm(ip("10.0.0.0"), 8)}, fwd(1), strict=True)
    t.insert({}, fwd(0), strict=True)  # omitted lpm field = /0 default route
    assert t.apply((ip("11.0.0.0"),)).action == fwd(0)


def test_clear_keeps_const_entries_unless_asked() -> None:
    t = Table("i", [KeyField("a", MatchKind.EXACT, 8)])
    t.add_initial_entries([InitialEntry([1], fwd(1), is_const=True)], const_entries=False)
    t.insert([2], fwd(2))
    t.clear()
    assert [e.match for e in t.entries()] == [(Exact(1),)]
    t.clear(include_const=True)
    assert len(t) == 0 and t.lookup((1,)) is None


# -- idle timeout -------------------------------------------------------------

class FakeClock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


def test_idle_timeout() -> None:
    clk = FakeClock()
    t = exact_table(support_timeout=True, clock=clk)
    t.insert([1, 1], fwd(1), idle_timeout_ns=100)
    t.insert([1, 2], fwd(2))  # no TTL: never expires
    clk.now = 50
    assert t.expired(clk.now) == []
    t.apply((1, 1))  # hit at 50
    assert t.get([1, 1]).last_hit_ns == 50
    clk.now = 149
    assert t.expired(clk.now) == []
    clk.now = 150
    assert [e.match for e in t.expired(clk.now)] == [(Exact(1), Exact(1))]
    assert t.expired(200) == []  # reported once per idle period
    clk.now = 210
    t.apply((1, 1))
    assert t.expired(300) == []
    assert len(t.expired(310)) == 1
    assert t.get([1, 1]).time_since_last_hit(400) == 190


def test_idle_timeout_needs_support() -> None:
    t = exact_table()
    with pytest.raises(InvalidArgument):
        t.insert([1, 1], fwd(1), idle_timeout_ns=5)
    t.insert([1, 1], fwd(1))
    assert t.expired(10**12) == []
    assert t.apply((1, 1)).last_hit_ns == 0  # no hit tracking without support
