"""Action profiles / selectors: member and group lifecycle, references, selection."""

from __future__ import annotations

from collections import Counter

import pytest

from emu.p4.tables import (
    ActionCall,
    ActionProfile,
    ActionSpec,
    AlreadyExists,
    ErrorKind,
    FailedPrecondition,
    GroupMember,
    InvalidArgument,
    KeyField,
    Lpm,
    MatchKind,
    NotFound,
    ResourceExhausted,
    SizeSemantics,
    Table,
)


def nh(port: int) -> ActionCall:
    return ActionCall("set_nhop", (port,))


def selector(**kw: object) -> ActionProfile:
    return ActionProfile("as", with_selector=True, **kw)  # type: ignore[arg-type]


def test_member_lifecycle() -> None:
    p = ActionProfile("ap", size=2)
    p.insert_member(1, nh(1))
    with pytest.raises(AlreadyExists):
        p.insert_member(1, nh(2))
    with pytest.raises(InvalidArgument):
        p.insert_member(0, nh(2))
    p.insert_member(2, nh(2))
    with pytest.raises(ResourceExhausted):
        p.insert_member(3, nh(3))
    p.modify_member(2, nh(22))
    assert p.get_member(2).action == nh(22)
    with pytest.raises(NotFound):
        p.modify_member(5, nh(1))
    with pytest.raises(NotFound):
        p.delete_member(5)
    p.delete_member(2)
    assert [m.member_id for m in p.members()] == [1]
    with pytest.raises(InvalidArgument):
        p.insert_group(1, [1])  # no selector: no groups


def test_member_action_checked_against_specs() -> None:
    p = ActionProfile("ap", actions=[ActionSpec("set_nhop", 7, (9,))])
    assert p.insert_member(1, ActionCall(7, (3,))).action == nh(3)
    with pytest.raises(InvalidArgument):
        p.insert_member(2, ActionCall("other"))
    with pytest.raises(InvalidArgument):
        p.insert_member(2, ActionCall(7, (1024,)))


def test_group_lifecycle_and_rules() -> None:
    p = selector(max_group_size=8)
    for i in (1, 2, 3):
        p.insert_member(i, nh(i))
    with pytest.raises(InvalidArgument):
        p.insert_group(1, [1, 2], max_size=0)  # max_group_size > 0 needs max_size > 0
    with pytest.raises(InvalidArgument):
        p.insert_group(1, [1, 2], max_size=9)
    with pytest.raises(NotFound):
        p.insert_group(1, [1, 9], max_size=8)
    with pytest.raises(InvalidArgument):
        p.insert_group(1, [(1, 0)], max_size=8)  # weight 0
    with pytest.raises(InvalidArgument):
        p.insert_group(1, [1, 1], max_size=8)  # duplicate member
    with pytest.raises(ResourceExhausted):
        p.insert_group(1, [(1, 5), (2, 4)], max_size=8)  # sum of weights 9 > 8
    g = p.insert_group(1, [(1, 2), 2], max_size=8)
    assert g.members == (GroupMember(1, 2), GroupMember(2, 1))
    with pytest.raises(AlreadyExists):
        p.insert_group(1, [3], max_size=8)
    with pytest.raises(InvalidArgument):
        p.modify_group(1, [3], max_size=4)  # max_size cannot change
    with pytest.raises(NotFound):
        p.modify_group(7, [3])
    # Member in a group cannot be deleted: FAILED_PRECONDITION.
    with pytest.raises(FailedPrecondition) as ei:
        p.delete_member(1)
    assert ei.value.kind is ErrorKind.FAILED_PRECONDITION
    p.modify_group(1, [3], max_size=8)
    p.delete_member(1)  # no longer in any group
    with pytest.raises(FailedPrecondition):
        p.delete_member(3)
    p.delete_group(1)
    p.delete_member(3)
    with pytest.raises(NotFound):
        p.delete_group(1)
    # Separate id scopes: group 2 and member 2 coexist.
    p.insert_group(2, [2], max_size=1)
    assert p.get_group(2).group_id == 2 and p.get_member(2).member_id == 2


def test_sum_of_members_semantics() -> None:
    p = selector(max_group_size=2, size_semantics=SizeSemantics.SUM_OF_MEMBERS,
                 max_member_weight=10)
    for i in (1, 2, 3):
        p.insert_member(i, nh(i))
    p.insert_group(1, [(1, 10), (2, 10)], max_size=2)
    with pytest.raises(ResourceExhausted):
        p.modify_group(1, [1, 2, 3])
    with pytest.raises(InvalidArgument):
        p.modify_group(1, [(1, 11)])


def test_table_references_block_deletes() -> None:
    p = selector()
    p.insert_member(1, nh(1))
    p.insert_member(2, nh(2))
    p.insert_group(10, [1, 2])
    t = Table("ecmp", [KeyField("dst", MatchKind.LPM, 32),
                       KeyField("src", MatchKind.SELECTOR, 32)], implementation=p)
    t.insert([Lpm(0x0a000000, 8)], group_id=10)
    t.insert([Lpm(0x0b000000, 8)], member_id=2)
    with pytest.raises(NotFound):
        t.insert([Lpm(0x0c000000, 8)], member_id=9)
    with pytest.raises(NotFound):
        t.insert([Lpm(0x0c000000, 8)], group_id=9)
    with pytest.raises(InvalidArgument):
        t.insert([Lpm(0x0c000000, 8)], nh(1))  # direct action on an indirect table
    with pytest.raises(InvalidArgument):
        t.insert([Lpm(0x0c000000, 8)], member_id=1, group_id=10)
    with pytest.raises(FailedPrecondition):
        p.delete_group(10)
    p.modify_group(10, [1])
    with pytest.raises(FailedPrecondition):
        p.delete_member(2)  # referenced by a table entry
    t.modify([Lpm(0x0b000000, 8)], member_id=1)
    p.delete_member(2)
    t.delete([Lpm(0x0a000000, 8)])
    p.delete_group(10)
    with pytest.raises(FailedPrecondition):
        p.delete_member(1)
    t.delete([Lpm(0x0b000000, 8)])
    p.delete_member(1)


def test_profile_without_selector_rejects_group_refs() -> None:
    p = ActionProfile("ap")
    p.insert_member(1, nh(1))
    t = Table("t", [KeyField("a", MatchKind.EXACT, 8)], implementation=p)
    t.insert([1], member_id=1)
    with pytest.raises(InvalidArgument):
        t.insert([2], group_id=1)
    e = t.apply((1,))
    assert e.member_id == 1 and p.member_action(e.member_id) == nh(1)


def test_selection_is_hash_mod_expanded_weights() -> None:
    p = selector()
    for i in (1, 2, 3):
        p.insert_member(i, nh(i))
    p.insert_group(1, [(1, 1), (2, 2), (3, 1)])
    picks = [p.select(1, h) for h in range(8)]
    assert [m.member_id for m in picks if m] == [1, 2, 2, 3, 1, 2, 2, 3]


def test_weighted_selection_distribution() -> None:
    p = selector()
    weights = {1: 1, 2: 3, 3: 4}
    for i in weights:
        p.insert_member(i, nh(i))
    p.insert_group(1, list(weights.items()))
    n = 80_000
    counts: Counter[int] = Counter()
    for h in range(n):
        m = p.select(1, (h * 2654435761) & 0xFFFFFFFF)  # spread-out hash values
        assert m is not None
        counts[m.member_id] += 1
    total = sum(weights.values())
    for mid, w in weights.items():
        assert abs(counts[mid] / n - w / total) < 0.01


def test_member_modify_seen_by_groups_and_empty_group() -> None:
    p = selector()
    p.insert_member(1, nh(1))
    p.insert_group(1, [1])
    p.modify_member(1, nh(42))
    m = p.select(1, 12345)
    assert m is not None and m.action == nh(42)
    p.insert_group(2, [])
    assert p.select(2, 7) is None


def test_watch_port_excludes_down_members() -> None:
    p = selector()
    p.insert_member(1, nh(1))
    p.insert_member(2, nh(2))
    p.insert_group(1, [GroupMember(1, 1, watch_port=5), GroupMember(2, 1, watch_port=6)])
    p.set_port_status(5, up=False)
    assert {p.select(1, h).member_id for h in range(10)} == {2}  # type: ignore[union-attr]
    p.set_port_status(6, up=False)
    assert p.select(1, 3) is None
    p.set_port_status(5, up=True)
    p.set_port_status(6, up=True)
    assert {p.select(1, h).member_id for h in range(10)} == {1, 2}  # type: ignore[union-attr]
