"""Preprocessor: includes, guards, macros, #if, source map."""

from __future__ import annotations

from pathlib import Path

import pytest

from emu.p4.frontend import P4Error
from emu.p4.frontend.preprocess import preprocess_file, preprocess_text


def _lines(text: str) -> list[str]:
    return [ln.strip() for ln in text.splitlines() if ln.strip()]


def test_object_and_function_macros() -> None:
    pp = preprocess_text(
        "#define W 8\n#define ADD(a, b) ((a) + (b))\n#define TWICE(x) ADD(x, x)\nbit<W> v = TWICE(W);\n",
        "m.p4",
    )
    assert _lines(pp.text) == ["bit<8> v = ((8) + (8));"]


def test_line_directives_and_gnu_linemarkers_are_taken() -> None:
    """Preprocessed P4 (cpp's or p4c --pp's output, as p4c's pins/pins_middleblock.p4,
    SONiC PINS's SAI pipeline) is full of `# 369 "file.p4" 1 2` linemarkers: each was
    an "invalid preprocessing directive"."""
    pp = preprocess_text('# 1 "a.p4"\n# 369 "../sai_p4/acl.p4" 1 2\n#line 7 "b.p4"\n'
                         "bit<8> x;\n# 12 \"a.p4\" 2\n", "pre.p4")
    assert _lines(pp.text) == ["bit<8> x;"]


def test_no_recursive_self_expansion() -> None:
    pp = preprocess_text("#define foo foo + 1\n#define f(x) f(x) * 2\nfoo; f(3);\n", "r.p4")
    assert _lines(pp.text) == ["foo + 1; f(3) * 2;"]


def test_stringize_and_paste() -> None:
    pp = preprocess_text('#define S(x) #x\n#define CAT(a, b) a ## b\nS(hi) CAT(foo, bar)\n', "s.p4")
    assert _lines(pp.text) == ['"hi" foobar']


def test_if_arithmetic_defined_elif_else() -> None:
    src = """\
#define V 20200408
#if V >= 20200408 && defined(V) && !defined UNDEF
yes1
#else
no1
#endif
#if (1 << 4) + 2 * 3 == 22 ? 0 : 1
no2
#elif 7 % 4 == 3
yes2
#else
no3
#endif
#ifdef UNDEF
no4
#elif 0
no5
#else
yes3
#endif
#ifndef V
no6
#endif
#undef V
#ifdef V
no7
#endif
"""
    assert _lines(preprocess_text(src, "c.p4").text) == ["yes1", "yes2", "yes3"]


def test_nested_conditionals_in_inactive_branch() -> None:
    src = "#if 0\n#if 1\nno\n#else\nno\n#endif\n#else\nyes\n#endif\n"
    assert _lines(preprocess_text(src, "n.p4").text) == ["yes"]


def test_line_continuation_and_comments() -> None:
    src = "#define LONG(a) \\\n    (a + \\\n     1)\nx = LONG(2); // gone\n/* multi\n line */ y;\n"
    assert _lines(preprocess_text(src, "l.p4").text) == ["x = (2 + 1);", "y;"]


@pytest.mark.parametrize("src, at", [
    ("x;\n  /* never closed\ny;\n", (2, 3)),
    ('x; // a /* in a line comment is text\n"/* in a string" /* /* nested opener\n', (2, 18)),
    # cpp strips comments before it reads directives: the #endif is inside it
    ("#if 0\n/* in an inactive branch\n#endif\n", (2, 1)),
])
def test_an_unterminated_comment_is_an_error_at_its_start(src: str, at: tuple[int, int]) -> None:
    """Found by fuzzing P4 programs: a block comment the file never closes swallowed the
    rest of it silently (a truncated file checked "ok"); p4c stops at cpp's
    "unterminated comment"."""
    with pytest.raises(P4Error) as ei:
        preprocess_text(src, "c.p4")
    d = ei.value.diagnostics[0]
    assert (d.file, d.line, d.col, d.message) == ("c.p4", *at, "unterminated comment")
    assert [x.message for x in ei.value.diagnostics[1:]] == (
        ["unterminated conditional directive"] if src.startswith("#if") else [])


def test_an_unterminated_comment_in_an_included_file_names_that_file(tmp_path: Path) -> None:
    (tmp_path / "inc.p4").write_text("a;\n/*\n")
    (tmp_path / "main.p4").write_text('#include "inc.p4"\nb;\n')
    with pytest.raises(P4Error) as ei:
        preprocess_file(str(tmp_path / "main.p4"))
    [d] = ei.value.diagnostics
    assert (d.file, d.line, d.col) == (str(tmp_path / "inc.p4"), 2, 1)


def test_includes_guards_and_pragma_once(tmp_path: Path) -> None:
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "guarded.p4").write_text("#ifndef G\n#define G\nguarded;\n#endif\n")
    (tmp_path / "once.p4").write_text("#pragma once\nonce;\n")
    main = tmp_path / "main.p4"
    main.write_text(
        '#include <guarded.p4>\n#include <guarded.p4>\n#include "once.p4"\n#include "once.p4"\nend;\n'
    )
    pp = preprocess_file(str(main), include_dirs=[str(inc)])
    assert _lines(pp.text) == ["guarded;", "once;", "end;"]


def test_project_include_dir_is_searched(tmp_path: Path) -> None:
    main = tmp_path / "m.p4"
    main.write_text("#include <v1model.p4>\nV1MODEL_VERSION\n")
    pp = preprocess_file(str(main))
    # p4c's default, so that what the embedded target accepts p4c accepts too.
    assert _lines(pp.text)[-1] == "20180101"
    assert any(f.endswith("core.p4") for f in pp.files)


def test_source_map_through_include_and_macro(tmp_path: Path) -> None:
    (tmp_path / "defs.p4").write_text("\n#define N(x)  (x + 1)\nconst bit<8> A = 1;\n")
    main = tmp_path / "main.p4"
    main.write_text('#include "defs.p4"\n  const bit<8> B =   N(value);\n')
    pp = preprocess_file(str(main))
    out = pp.text.splitlines()
    # 'A' comes from defs.p4 line 3.
    ln = next(i for i, t in enumerate(out, 1) if "A =" in t)
    p = pp.source_map.lookup(ln, out[ln - 1].index("A") + 1)
    assert (Path(p.file).name, p.line, p.col) == ("defs.p4", 3, 14)
    ln = next(i for i, t in enumerate(out, 1) if "B =" in t)
    text = out[ln - 1]
    # A macro argument maps to where it was written ...
    p = pp.source_map.lookup(ln, text.index("value") + 1)
    assert (Path(p.file).name, p.line, p.col) == ("main.p4", 2, 24)
    # ... and the macro's own tokens map to the invocation.
    p = pp.source_map.lookup(ln, text.index("+") + 1)
    assert (p.line, p.col) == (2, 22)


def test_error_directive_and_missing_include() -> None:
    with pytest.raises(P4Error) as ei:
        preprocess_text('\n#error "unsupported config"\n#include <nope.p4>\n', "e.p4")
    msgs = [(d.line, d.col, d.message) for d in ei.value.diagnostics]
    assert msgs[0][:2] == (2, 2) and "#error" in msgs[0][2] and "unsupported config" in msgs[0][2]
    assert msgs[1][:2] == (3, 10) and "cannot find include file 'nope.p4'" in msgs[1][2]


def test_other_architecture_include_is_named_unsupported() -> None:
    """p4c's PSA / eBPF samples include their architecture: an unsupported target, not a
    missing file (the corpus runner skips those as unsupported)."""
    with pytest.raises(P4Error) as ei:
        preprocess_text("#include <core.p4>\n#include <psa.p4>\n", "psa.p4")
    d = ei.value.diagnostics[0]
    assert (d.line, d.col) == (2, 10)
    assert d.message == "architecture file 'psa.p4' (not supported by the embedded v1model target)"


def test_unterminated_conditional() -> None:
    with pytest.raises(P4Error, match="unterminated conditional"):
        preprocess_text("#ifdef X\nfoo\n", "u.p4")


def test_v1model_version_selects_old_signatures() -> None:
    from emu.p4.frontend import check_source

    old = """
#define V1MODEL_VERSION 20180101
#include <v1model.p4>
control c(inout standard_metadata_t sm) {
    register<bit<32>>(16) r;
    counter(4, CounterType.packets) cnt;
    apply { r.write(32w1, 32w7); cnt.count(32w2); mark_to_drop(); }
}
"""
    cp = check_source(old, "old.p4")
    assert "c" in cp.controls


_V1MODEL_USES = """
#include <v1model.p4>
control c(inout standard_metadata_t sm) {
    USE
    apply { }
}
"""


@pytest.mark.parametrize("use, old_ok, new_ok", [
    ("register<bit<32>, bit<16>>(16) r;", False, True),
    ("register<bit<32>>(16) r;", True, False),
    ("counter<bit<16>>(4, CounterType.packets) c;", False, True),
    ("counter(4, CounterType.packets) c;", True, False),
    ("meter<bit<16>>(4, MeterType.bytes) m;", False, True),
    ("meter(4, MeterType.bytes) m;", True, False),
    ("PortId_t p = 1;", False, True),
    ("MulticastGroup_t g = 1;", False, False),
])
def test_v1model_declarations_per_version(use: str, old_ok: bool, new_ok: bool) -> None:
    """The bundled v1model.p4 declares what p4c's does under each V1MODEL_VERSION, with
    p4c's default (20180101) when the program names none."""
    from emu.p4.frontend import check_source

    def accepted(src: str) -> bool:
        try:
            check_source(src, "v.p4")
        except P4Error:
            return False
        return True

    src = _V1MODEL_USES.replace("USE", use)
    assert accepted(src) is old_ok
    assert accepted("#define V1MODEL_VERSION 20180101\n" + src) is old_ok
    assert accepted("#define V1MODEL_VERSION 20200408\n" + src) is new_ok


def test_macro_invocation_spanning_lines() -> None:
    src = "#define ADD(a, b) (a + b)\nx = ADD(1,\n        2);\ny;\n"
    pp = preprocess_text(src, "span.p4")
    assert _lines(pp.text) == ["x = (1 + 2);", "y;"]
    out = pp.text.splitlines()
    ln = next(i for i, t in enumerate(out, 1) if "x =" in t)
    p = pp.source_map.lookup(ln, out[ln - 1].index("2") + 1)
    assert (p.line, p.col) == (3, 9)
