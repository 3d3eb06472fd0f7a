"""`python -m emu.p4`: subprocess tests of exit codes, files written and messages."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf import json_format, text_format
from p4.config.v1 import p4info_pb2

FEATURES = Path(__file__).parent / "p4info" / "programs" / "features.p4"

# Forwards every packet unchanged from any port to port 1.
PASS_THROUGH = """
#include <core.p4>
#include <v1model.p4>
struct headers_t { }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = PORT; }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def have(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


needs_compiler = pytest.mark.skipif(not have("emu.p4.api"), reason="emu.p4.api (code generator) not there yet")
needs_stf = pytest.mark.skipif(not have("emu.p4.stf.runner"), reason="emu.p4.stf.runner not there yet")


def run(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "emu.p4", *map(str, args)],
        capture_output=True, text=True, cwd=cwd, timeout=120,
    )


def no_traceback(r: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in r.stderr, r.stderr


def test_help_lists_commands() -> None:
    r = run("--help")
    assert r.returncode == 0
    for cmd in ("compile", "check", "stf"):
        assert cmd in r.stdout


def test_no_command_is_a_usage_error() -> None:
    r = run()
    assert r.returncode == 2
    no_traceback(r)


def test_check_ok() -> None:
    r = run("check", FEATURES)
    assert (r.returncode, r.stdout.strip()) == (0, "ok")


def test_check_error_gives_file_line_col(tmp_path: Path) -> None:
    bad = tmp_path / "bad.p4"
    bad.write_text("#include <core.p4>\ncontrol C() {\n    apply { x = 1; }\n}\n")
    r = run("check", bad)
    assert r.returncode == 1
    no_traceback(r)
    assert f"{bad}:3:13: error: unknown name 'x'" in r.stderr
    assert "1 error" in r.stderr


def test_check_with_defines_and_includes(tmp_path: Path) -> None:
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "port.p4").write_text("#define PORT_VALUE 9w1\n")
    prog = tmp_path / "p.p4"
    prog.write_text('#include "port.p4"\n' + PASS_THROUGH)
    r = run("check", "-I", inc, "-D", "PORT=PORT_VALUE", prog)
    assert (r.returncode, r.stdout.strip()) == (0, "ok"), r.stderr
    r = run("check", prog)  # without -I the include is missing
    assert r.returncode == 1
    no_traceback(r)


def test_missing_program_file(tmp_path: Path) -> None:
    r = run("check", tmp_path / "nope.p4")
    assert r.returncode == 1
    no_traceback(r)
    assert "nope.p4" in r.stderr


def test_bad_define_is_a_usage_error() -> None:
    r = run("check", "-D", "1x", FEATURES)
    assert r.returncode == 2
    no_traceback(r)
    assert "bad -D argument" in r.stderr


def test_compile_p4info_only(tmp_path: Path) -> None:
    out = tmp_path / "build"
    r = run("compile", FEATURES, "-o", out, "--no-target")
    assert r.returncode == 0, r.stderr
    path = out / "features.p4info.txtpb"
    text = path.read_text()
    assert text.startswith("# proto-file: p4/config/v1/p4info.proto\n")
    info = text_format.Parse(text, p4info_pb2.P4Info())
    assert "Ing.ipv4_lpm" in [t.preamble.name for t in info.tables]
    assert info.pkg_info.arch == "v1model"
    assert not (out / "features.emu.json").exists()
    assert not (out / "features.p4src.json").exists()


def test_compile_p4runtime_files_by_extension(tmp_path: Path) -> None:
    files = [tmp_path / "x.bin", tmp_path / "x.json", tmp_path / "x.txt"]
    r = run("compile", FEATURES, "--no-target", "--p4runtime-files", ",".join(map(str, files)))
    assert r.returncode == 0, r.stderr
    msgs = []
    for f in files:
        m = p4info_pb2.P4Info()
        if f.suffix == ".bin":
            m.ParseFromString(f.read_bytes())
        elif f.suffix == ".json":
            json_format.Parse(f.read_text(), m)
        else:
            text_format.Parse(f.read_text(), m)
        msgs.append(m)
    assert msgs[0] == msgs[1] == msgs[2]
    assert msgs[0].tables


def test_compile_error_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.p4"
    bad.write_text("control C() { apply { y = 2; } }\n")
    r = run("compile", bad, "-o", tmp_path / "build", "--no-target")
    assert r.returncode == 1
    no_traceback(r)
    assert f"{bad}:1:23: error:" in r.stderr
    assert not (tmp_path / "build").exists()


@needs_compiler
def test_compile_writes_p4info_and_artefact(tmp_path: Path) -> None:
    prog = tmp_path / "pt.p4"
    prog.write_text(PASS_THROUGH.replace("PORT", "9w1"))
    out = tmp_path / "build"
    r = run("compile", prog, "-o", out)
    assert r.returncode == 0, r.stderr
    assert (out / "pt.p4info.txtpb").is_file()
    assert (out / "pt.emu.json").stat().st_size > 0
    # the device config a switch takes from any client: the sources it compiles
    bundle = json.loads((out / "pt.p4src.json").read_text())
    assert bundle["format"] == "p4-source" and bundle["main"] == "pt.p4"
    assert bundle["files"] == {"pt.p4": prog.read_text()}


@needs_stf
def test_stf_pass_fail_and_syntax_error(tmp_path: Path) -> None:
    prog = tmp_path / "pt.p4"
    prog.write_text(PASS_THROUGH.replace("PORT", "9w1"))
    good = tmp_path / "good.stf"
    good.write_text("packet 0 0102030405060708090a0b0c0d0e0f10\nexpect 1 0102030405060708090a0b0c0d0e0f10\n")
    r = run("stf", prog, good)
    assert (r.returncode, r.stdout.strip()) == (0, "ok"), r.stdout + r.stderr

    wrong = tmp_path / "wrong.stf"
    wrong.write_text("packet 0 0102030405060708090a0b0c0d0e0f10\nexpect 1 ffff030405060708090a0b0c0d0e0f10\n")
    r = run("stf", prog, wrong)
    assert r.returncode == 1
    no_traceback(r)
    assert "FFFF" in r.stdout.upper()  # the report shows the expected bytes

    broken = tmp_path / "broken.stf"
    broken.write_text("packet 0 00\npacket x 00\n")  # a port must be a number
    r = run("stf", prog, broken)
    assert r.returncode == 2
    no_traceback(r)
    assert f"{broken}:2: error:" in r.stderr
