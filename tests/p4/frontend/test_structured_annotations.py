"""Structured annotations (`@name[...]`, P4_16 spec 18.2): their bodies are parsed as
expressions or key = value pairs and folded to constants, as p4c does."""

from __future__ import annotations

import pytest

from emu.p4.frontend import check_source

from .conftest import check_errors


def _values(src: str) -> dict[str, list[tuple[str | None, object]]]:
    prog = check_source("#include <core.p4>\n" + src)
    out = {}
    for a in prog.program.structured_annotations:
        out[a.name] = [(k, getattr(e, "value", None) if e.const is None else e.const)
                       for k, e in a.structured or []]
    return out


def test_expressions_and_pairs_fold_to_constants() -> None:
    src = """const bit<8> K = 4;
#define TEXT "hello"
@List[1, TEXT, true, 1 == 2, 5 + K]
@Pairs[label = "text", my_bool = true, int_val = 2 * 3,]
@Empty[]
control c() { apply {} }
"""
    assert _values(src) == {
        "List": [(None, 1), (None, "hello"), (None, True), (None, False), (None, 9)],
        "Pairs": [("label", "text"), ("my_bool", True), ("int_val", 6)],
        "Empty": [],
    }


@pytest.mark.parametrize("src,message", [
    # structured-annotation-e1, structured-annotation-e3
    ("@dup[]\n@dup[]\ncontrol c() { apply {} }", "@dup: duplicate name for structured annotation"),
    ("@n(3)\n@n[]\ncontrol c() { apply {} }", "@n: duplicate name for structured annotation"),
    # structured-annotation-e2
    ("@badType[a = { 2, 3 }] control c() { apply {} }",
     "an element of the structured annotation '@badType' must be a constant int, string or bool"),
    ("control c(in bit<8> x) { @A[x] action a() {} apply { a(); } }",
     "unknown name 'x'"),
    ("extern E { E(); }\nE() e1;\n@A[e1 == e1] control c() { apply {} }",
     "cannot be compared"),
    ("@A[k = 1, k = 2] control c() { apply {} }", "duplicate key in the structured annotation '@A'"),
])
def test_bad_structured_annotations_are_refused(src: str, message: str) -> None:
    err = check_errors("#include <core.p4>\n" + src)
    assert any(message in d.message for d in err.diagnostics), [d.message for d in err.diagnostics]


def test_a_syntax_error_in_the_body_is_placed_in_the_file() -> None:
    err = check_errors("#include <core.p4>\n\n   @A[1 2]\ncontrol c() { apply {} }\n")
    (d,) = err.diagnostics
    assert (d.line, d.col) == (3, 9), d
    assert "syntax error: unexpected '2'" in d.message
