"""The disk cache of compiled programs: a hit is the program a compile gives, an edited
include is a miss, and a broken or unwritable cache only costs the compile."""

from __future__ import annotations

from pathlib import Path

import pytest

from emu.p4.target.compile_cache import cache_dir, compile_file_cached
from emu.p4.target.program import compile_file

from ..programs import v1model_program


def _program(tmp_path: Path, port: int) -> Path:
    """main.p4 including port.p4, whose constant is the egress port."""
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    (src / "port.p4").write_text(f"const bit<9> OUT = {port};\n")
    main = src / "main.p4"
    main.write_text('#include "port.p4"\n'
                    + v1model_program("apply { sm.egress_spec = OUT; }"))
    return main


def test_second_compile_is_served_from_the_cache(tmp_path: Path) -> None:
    main = _program(tmp_path, 3)
    cache = tmp_path / "cache"
    first = compile_file_cached(str(main), directory=cache)
    (entry,) = cache.iterdir()
    fresh = compile_file(str(main))
    assert (first.source, first.info, first.name) == (fresh.source, fresh.info, fresh.name)
    # The entry is what the second compile returns: mark it and see the mark come back.
    marked = entry.read_bytes().replace(b"egress_spec", b"egress_spec_marked", 1)
    assert marked != entry.read_bytes()
    entry.write_bytes(marked)
    assert "egress_spec_marked" in compile_file_cached(str(main), directory=cache).source


def test_an_edited_include_or_define_is_a_miss(tmp_path: Path) -> None:
    main = _program(tmp_path, 3)
    cache = tmp_path / "cache"
    three = compile_file_cached(str(main), directory=cache)
    _program(tmp_path, 5)  # the include changes, main.p4 does not
    five = compile_file_cached(str(main), directory=cache)
    assert five.source != three.source and five.source == compile_file(str(main)).source
    compile_file_cached(str(main), defines={"X": "1"}, directory=cache)
    assert len(list(cache.iterdir())) == 3


def test_a_corrupt_entry_is_compiled_again_and_replaced(tmp_path: Path) -> None:
    main = _program(tmp_path, 3)
    cache = tmp_path / "cache"
    good = compile_file_cached(str(main), directory=cache)
    (entry,) = cache.iterdir()
    entry.write_bytes(b"{not json")
    assert compile_file_cached(str(main), directory=cache).source == good.source
    assert entry.read_bytes().startswith(b"{\"format\"")


def test_an_unwritable_cache_still_compiles(tmp_path: Path) -> None:
    main = _program(tmp_path, 3)
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache directory would be")
    prog = compile_file_cached(str(main), directory=blocker / "p4")
    assert prog.source == compile_file(str(main)).source


def test_cache_location_from_the_environment() -> None:
    assert cache_dir({"EMU_P4_CACHE": "/x/y"}) == Path("/x/y")
    assert cache_dir({"XDG_CACHE_HOME": "/c"}) == Path("/c/emu/p4")
    assert cache_dir({}).parts[-3:] == (".cache", "emu", "p4")


@pytest.fixture(autouse=True)
def _no_user_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMU_P4_CACHE", str(tmp_path / "default-cache"))


def test_the_cache_keeps_only_the_most_recent_entries(tmp_path: Path) -> None:
    import os

    from emu.p4.target import compile_cache

    main = _program(tmp_path, 3)
    cache = tmp_path / "cache"
    compile_file_cached(str(main), directory=cache)
    (first,) = cache.iterdir()
    os.utime(first, (1, 1))  # the oldest entry
    for i in range(compile_cache.MAX_ENTRIES):
        compile_file_cached(str(main), defines={"N": str(i)}, directory=cache)
    entries = list(cache.iterdir())
    assert len(entries) == compile_cache.MAX_ENTRIES and first not in entries
