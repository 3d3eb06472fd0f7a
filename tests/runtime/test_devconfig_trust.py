"""A compiled program is generated Python, which loading it runs: over P4Runtime the
switch takes one only from clients it was told to trust (--trust-compiled-configs), and
compiles the P4 sources it is sent otherwise (emu.runtime.devconfig, docs/security.md).

Found on reading the device-config path: any client that reached a switch's P4Runtime
port (127.0.0.1, so any local user; any host with --grpc-addr 0.0.0.0) could send an
`emu-p4-compiled` artefact whose "source" ran as the switch, i.e. as root."""

from __future__ import annotations

import json
from pathlib import Path

import grpc
import pytest
from p4.config.v1 import p4info_pb2

from emu.core.clock import VirtualClock
from emu.p4.target.program import FORMAT, FORMAT_VERSION, compile_file
from emu.runtime.devconfig import make_compiled_config, make_program_config
from emu.runtime.device import LocalDevice
from emu.runtime.translate import P4InfoIndex

from ..p4.programs import v1model_program
from .conftest import ECMP_P4, Rig, p4info_of


def _hostile(marker: Path) -> bytes:
    """An artefact of the compiler's format whose code writes `marker`."""
    return json.dumps({"format": FORMAT, "version": FORMAT_VERSION, "name": "x",
                       "source": f"open({str(marker)!r}, 'w').write('ran')\n",
                       "info": {}}).encode()


@pytest.mark.parametrize("wrap", [False, True], ids=["emu-p4-compiled", "emu-compiled-v1"])
def test_a_client_cannot_make_the_switch_run_code(rig: Rig, tmp_path: Path, wrap: bool,
                                                  ecmp_p4info: p4info_pb2.P4Info) -> None:
    marker = tmp_path / "ran"
    cfg = _hostile(marker)
    if wrap:
        cfg = make_compiled_config(cfg)
    c = rig.client()
    with pytest.raises(grpc.RpcError) as ei:
        c.set_pipeline(ecmp_p4info, cfg)
    assert ei.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    details = ei.value.details() or ""
    assert "--trust-compiled-configs" in details and "p4-source" in details, details
    assert not marker.exists()
    assert not c.get_pipeline().HasField("p4info")


def test_a_trusting_device_loads_compiled_programs() -> None:
    index = P4InfoIndex.build(p4info_of(ECMP_P4))
    compiled = compile_file(str(ECMP_P4)).to_bytes()
    for cfg in (compiled, make_compiled_config(compiled)):
        assert LocalDevice(0, VirtualClock(), trust_compiled=True).prepare(index, cfg)


def test_the_sources_of_a_program_load_on_any_device(tmp_path: Path) -> None:
    """make_program_config: the files the program reads, relative to the folder that
    holds them all, so an include of a sibling folder resolves on the switch."""
    (tmp_path / "common").mkdir()
    (tmp_path / "prog").mkdir()
    (tmp_path / "common" / "port.p4").write_text("#define OUT_PORT 3\n")
    (tmp_path / "prog" / "unused.p4").write_text("this is not P4\n")
    main = tmp_path / "prog" / "main.p4"
    main.write_text('#include "../common/port.p4"\n' + ECMP_P4.read_text()
                    .replace("#include <v1model.p4>", "#include <v1model.p4>\n#include <extra.p4>"))
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "extra.p4").write_text("const bit<9> EXTRA = OUT_PORT;\n")
    cfg = make_program_config(str(main), [str(tmp_path / "inc")])
    doc = json.loads(cfg)
    assert doc["format"] == "p4-source"
    assert doc["main"] == "prog/main.p4" and doc["include_dirs"] == ["inc"]
    assert sorted(doc["files"]) == ["common/port.p4", "inc/extra.p4", "prog/main.p4"]
    index = P4InfoIndex.build(p4info_of(ECMP_P4))
    assert LocalDevice(0, VirtualClock()).prepare(index, cfg)


def test_switches_loading_one_program_write_it_once_and_compile_it_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each switch of a fabric is sent the same sources: they land in one folder named
    by their content, so the compile cache (keyed by path and content) serves all but
    the first; an edited program is a new folder."""
    monkeypatch.setenv("EMU_P4SRC_CACHE", str(tmp_path / "src"))
    monkeypatch.setenv("EMU_P4_CACHE", str(tmp_path / "p4"))
    index = P4InfoIndex.build(p4info_of(ECMP_P4))
    cfg = make_program_config(str(ECMP_P4))
    for _ in range(3):
        assert LocalDevice(0, VirtualClock()).prepare(index, cfg)
    assert len(list((tmp_path / "src").iterdir())) == 1
    assert len(list((tmp_path / "p4").glob("*.json"))) == 1
    edited = json.loads(cfg)
    edited["files"][edited["main"]] += "\n// edited\n"
    assert LocalDevice(0, VirtualClock()).prepare(index, json.dumps(edited).encode())
    assert len(list((tmp_path / "src").iterdir())) == 2
    assert len(list((tmp_path / "p4").glob("*.json"))) == 2


def test_a_bundle_entry_that_leaves_its_folder_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from emu.runtime.devconfig import make_source_config
    from emu.runtime.errors import P4RTError

    monkeypatch.setenv("EMU_P4SRC_CACHE", str(tmp_path / "src"))
    index = P4InfoIndex.build(p4info_of(ECMP_P4))
    for name in ("../escape.p4", "/etc/escape.p4", "a\0b.p4"):
        cfg = make_source_config("m.p4", {"m.p4": ECMP_P4.read_text(), name: "x"})
        with pytest.raises(P4RTError, match="bad file entry"):
            LocalDevice(0, VirtualClock()).prepare(index, cfg)
    assert not (tmp_path / "escape.p4").exists() and not Path("/etc/escape.p4").exists()
    assert [d.name for d in (tmp_path / "src").iterdir()] == []  # no half-written folder


_BREAKOUT = v1model_program("""
    @name("x\\"); open('MARK1', 'w') #") action a1() { sm.egress_spec = 1; }
    @name("t'''\\n__import__('os').system('touch MARK2')\\n'''")
    table t {
        key = { hdr.h.a : exact @name("k\\"]); open('MARK3', 'w') #"); }
        actions = { a1; }
        default_action = a1();
    }
    apply { t.apply(); log_msg("\\"); open('MARK4', 'w') # {}", {hdr.h.a}); }""",
                            headers="header h_t { bit<8> a; }", fields="h_t h;")


def test_names_and_strings_of_a_program_do_not_become_code(tmp_path: Path) -> None:
    """What a switch compiles is the client's P4: its names, annotations and strings
    reach the generated Python as quoted literals only (docs/security.md)."""
    from emu.p4.api import P4Switch
    from emu.p4.target.program import compile_source

    text = _BREAKOUT
    for i in range(1, 5):
        text = text.replace(f"MARK{i}", str(tmp_path / f"ran{i}"))
    sw = P4Switch(compile_source(text, str(tmp_path / "b.p4")), VirtualClock())
    sw.inject(0, b"\x01")
    sw.run_until_idle()
    assert [(o.port, o.data) for o in sw.outputs()] == [(1, b"\x01")]
    assert list(tmp_path.iterdir()) == []


def test_a_cache_that_cannot_be_written_still_loads_the_sources(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bundle then goes to a folder for this load alone, removed after it."""
    import tempfile

    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    monkeypatch.setenv("EMU_P4SRC_CACHE", str(blocked / "src"))
    monkeypatch.setenv("EMU_P4_CACHE", str(tmp_path / "p4"))
    before = set(Path(tempfile.gettempdir()).glob("emu-p4src-*"))
    index = P4InfoIndex.build(p4info_of(ECMP_P4))
    assert LocalDevice(0, VirtualClock()).prepare(index, make_program_config(str(ECMP_P4)))
    assert set(Path(tempfile.gettempdir()).glob("emu-p4src-*")) == before


def test_a_file_where_the_bundles_folder_goes_still_loads_the_sources(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Renaming the written bundle into place failed (a file held its name), and the
    switch answered "compilation failed: [Errno 20] Not a directory" for a program that
    compiles: the bundle is then used where it was written, and removed after the load."""
    from emu.runtime.sourcebundle import bundle_digest

    src = tmp_path / "src"
    monkeypatch.setenv("EMU_P4SRC_CACHE", str(src))
    monkeypatch.setenv("EMU_P4_CACHE", str(tmp_path / "p4"))
    cfg = make_program_config(str(ECMP_P4))
    src.mkdir()
    (src / bundle_digest(json.loads(cfg)["files"])).write_text("junk")
    index = P4InfoIndex.build(p4info_of(ECMP_P4))
    assert LocalDevice(0, VirtualClock()).prepare(index, cfg)
    assert [p.name for p in src.iterdir()] == [bundle_digest(json.loads(cfg)["files"])]
