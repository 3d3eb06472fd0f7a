"""Metadata fields as locals in the generated packet paths (codegen/localize.py): the
values still reach egress, the switch and field lists; a struct used as a whole stays
an object."""

from __future__ import annotations

from emu.p4.api import P4Switch
from emu.p4.codegen.localize import StructLocals, localize
from emu.p4.target.program import compile_source

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header a_t {{ bit<8> x; bit<8> y; }}
struct H {{ a_t a; }}
struct M {{ bit<8> seen; bit<8> tmp; bool flag; }}
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {{
    state start {{ pk.extract(hdr.a); m.tmp = hdr.a.x; transition accept; }}
}}
control VC(inout H hdr, inout M m) {{ apply {{ }} }}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {{
    apply {{
        m.seen = m.tmp + 1;
        m.flag = m.seen > 8w10;
        if (m.flag) {{ sm.egress_spec = 2; }} else {{ sm.egress_spec = 1; }}
        {ingress}
    }}
}}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) {{
    apply {{ hdr.a.y = m.seen; {egress} }}
}}
control CC(inout H hdr, inout M m) {{ apply {{ }} }}
control D(packet_out pk, in H hdr) {{ apply {{ pk.emit(hdr.a); }} }}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def _run(frame: bytes, ingress: str = "", egress: str = "") -> tuple[list[tuple[int, bytes]], str]:
    prog = compile_source(PROGRAM.format(ingress=ingress, egress=egress), "t.p4")
    sw = P4Switch(prog)
    sw.inject(0, frame)
    sw.run_until_idle()
    return [(o.port, o.data) for o in sw.outputs()], prog.source


def _func(src: str, name: str) -> str:
    return src[src.index(f"def {name}("):].split("\ndef ")[0]


def test_ingress_metadata_reaches_egress_and_the_switch() -> None:
    out, src = _run(bytes([20, 0]) + b"p")
    assert out == [(2, bytes([20, 21]) + b"p")]  # egress_spec and m.seen both made it
    out, _ = _run(bytes([3, 0]) + b"p")
    assert out == [(1, bytes([3, 4]) + b"p")]
    ing = _func(src, "run_ingress")
    assert "_m_seen" in ing and "m.seen" not in ing.replace("_m_seen", "")
    # egress reads m.seen: stored back once; m.flag and m.tmp are not read after ingress
    assert "meta.seen = _m_seen" in ing
    assert "meta.flag =" not in ing and "meta.tmp =" not in ing
    assert "sm.egress_spec = _s_egress_spec" in ing


def test_egress_drop_is_seen_by_the_switch() -> None:
    out, src = _run(bytes([20, 0]) + b"p", egress="mark_to_drop(sm);")
    assert out == []
    eg = _func(src, "run_egress")
    # stored back before the early return that reads it
    assert eg.index("sm.egress_spec = _s_egress_spec") < eg.index("return None")


def test_metadata_used_whole_stays_an_object() -> None:
    # copied whole, changed, assigned back whole (a digest of `m` is per field: fine)
    ingress = "M c = m; c.seen = c.seen + 1; m = c;"
    out, src = _run(bytes([20, 0]) + b"p", ingress=ingress)
    assert out == [(2, bytes([20, 22]) + b"p")]
    assert "_m_" not in _func(src, "run_ingress")


def _spec(writeback: set[str] | None = None, fresh: bool = True) -> StructLocals:
    return StructLocals("meta", "_m_", {"a": "0", "b": "False"}, {"n"}, fresh, writeback)


def test_localize_stores_back_before_each_return() -> None:
    lines = ["def f(ps):", "    meta = M(); ps.meta = meta", "    meta.a = 1",
             "    if meta.a == 2: return None", "    if x:", "        meta.b = True",
             "        return 3", "    meta.n.x = meta.b", "    return 4"]
    got = localize(lines, _spec())
    assert got == ["def f(ps):", "    meta = M(); ps.meta = meta", "    _m_b, = False,",
                   "    _m_a = 1",
                   # every field the function may have assigned (a loop may have run
                   # later lines first)...
                   "    meta.a = _m_a; meta.b = _m_b", "    if _m_a == 2: return None",
                   "    if x:",
                   "        _m_b = True",
                   # ...then, after that top-level point, what was assigned since
                   "        meta.b = _m_b", "        return 3", "    meta.n.x = _m_b",
                   "    meta.b = _m_b", "    return 4"]


def test_localize_leaves_whole_and_aliased_uses_alone() -> None:
    base = ["def f(ps):", "    meta = M(); ps.meta = meta", "    meta.a = 1"]
    for extra in ("    g(meta)", "    ps.meta.a = 2", "    x = meta.copy()",
                  "    meta.a, y = 1, 2", "    meta = N()"):
        assert localize([*base, extra], _spec()) == [*base, extra]
    # a string literal that looks like an access is not one
    lines = [*base, "    log('meta.a')", "    return meta.a"]
    got = localize(lines, _spec(writeback=set()))
    assert got[-2:] == ["    log('meta.a')", "    return _m_a"]


def test_localize_only_takes_fields_set_first_thing_of_a_struct_it_did_not_create() -> None:
    # Loading a field the object may not hold yet costs more than it saves: a (set
    # before anything else) becomes a local, b (read from the object) stays.
    lines = ["def f(ps):", "    meta = ps.meta", "    meta.a = 3", "    if meta.b: meta.a = meta.a + 1",
             "    return None"]
    got = localize(lines, _spec(writeback={"a"}, fresh=False))
    assert got == ["def f(ps):", "    meta = ps.meta", "    _m_a = 3",
                   "    if meta.b: _m_a = _m_a + 1", "    meta.a = _m_a", "    return None"]
