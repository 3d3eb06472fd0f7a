"""The compiled per-packet modules (emu.core.accel): used only for their exact sources,
off with EMU_ACCEL=0, and a run gives the same bytes either way."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from emu.core import accel
from tests.experiments.experiment_files import metrics_files

REPO = Path(__file__).resolve().parents[2]


def _python(code: str, **env: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": str(REPO), **env},
                         check=True)
    return out.stdout.strip()


def _copy_sources(dst: Path) -> Path:
    for m in accel.COMPILED_MODULES:
        f = accel.source_path(m, dst)
        f.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(accel.source_path(m), f)
    return dst


def test_an_edited_source_has_another_build_folder(tmp_path: Path) -> None:
    env = {"EMU_ACCEL_DIR": str(tmp_path / "cache")}
    root = _copy_sources(tmp_path / "src")
    before = accel.build_dir(env, root=root)
    assert before == accel.build_dir(env)  # the same sources: the same build
    nic = accel.source_path("emu.roce.nic", root)
    nic.write_text(nic.read_text() + "\n# an edit\n")
    after = accel.build_dir(env, root=root)
    assert after.parent == before.parent and after != before


def test_without_a_matching_build_the_sources_run(tmp_path: Path) -> None:
    env = {"EMU_ACCEL_DIR": str(tmp_path)}
    choice, files = accel.choose(env)
    assert not choice.compiled and files == {}
    assert "make setup" in choice.reason
    # a build folder with a module missing is no build either
    out = accel.build_dir(env)
    for f in list(accel.extension_files(out, accel.COMPILED_MODULES).values())[1:]:
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(b"")
    assert not accel.choose(env)[0].compiled
    code = "import emu.roce.nic as m, emu.core.accel as a; print(m.__file__); print(a.status())"
    file, status = _python(code, EMU_ACCEL_DIR=str(tmp_path)).splitlines()
    assert file.endswith("nic.py") and status.startswith("pure Python (no build")


def test_no_home_directory_means_the_sources_run(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", no_home)
    choice, files = accel.choose({})  # no XDG_CACHE_HOME, no EMU_ACCEL_DIR
    assert not choice.compiled and files == {}
    assert choice.reason.startswith("no cache directory")


def test_emu_accel_0_runs_the_sources() -> None:
    assert accel.choose({"EMU_ACCEL": "0"})[0].reason == "EMU_ACCEL=0"
    code = "import emu.core.clock as m, emu.core.accel as a; print(m.__file__); print(a.status())"
    file, status = _python(code, EMU_ACCEL="0").splitlines()
    assert file.endswith("clock.py") and status == "pure Python (EMU_ACCEL=0)"


needs_build = pytest.mark.skipif(
    not accel.choose()[0].compiled,
    reason="no mypyc build of the per-packet modules here (make setup builds one: "
           "python -m emu.core.accel_build)")


@needs_build
def test_a_build_is_used_whichever_emu_module_comes_first() -> None:
    code = ("import emu.roce.wire as w, emu.core.accel as a, sys; "
            "print(w.__file__); print(a.status()); "
            "print(all(sys.modules[m].__file__.endswith('.so') for m in a.COMPILED_MODULES "
            "if m in sys.modules))")
    file, status, all_so = _python(code).splitlines()
    assert file.startswith(str(accel.build_dir())) and file.endswith(".so")
    assert status.startswith("compiled with mypyc") and all_so == "True"


EXPERIMENT = """\
name: parity
description: compiled against pure per-packet modules
base: {topology: clos4, workload: permutation, size: 32K, fail_after: 0.02}
grid:
  point:
    - {lb: ecmp, cc: dcqcn, recovery: gbn}
    - {lb: spray, cc: none, recovery: sr}
    - {lb: flowlet, cc: dcqcn, recovery: sr, fail_link: "leaf4:spine2"}
    - {lb: adaptive, cc: dcqcn, recovery: gbn, workload: incast}
    - {lb: ecmp, cc: dcqcn, recovery: gbn, flow_control: pfc, workload: incast}
    - {lb: ecmp, cc: none, recovery: gbn, flow_control: credit, workload: incast}
seeds: [1]
timeout: 300
"""


@needs_build
def test_compiled_and_pure_modules_write_byte_identical_metrics(tmp_path: Path) -> None:
    f = tmp_path / "parity.yaml"
    f.write_text(EXPERIMENT)
    got = {}
    for name, env in (("compiled", {}), ("pure", {"EMU_ACCEL": "0"})):
        subprocess.run([sys.executable, "-m", "emu", "experiment", str(f), "--results",
                        str(tmp_path / name), "--jobs", "2"], cwd=REPO, check=True,
                       capture_output=True, env={**os.environ, "PYTHONPATH": str(REPO), **env})
        got[name] = metrics_files(tmp_path / name / "experiments" / "parity")
    assert len(got["pure"]) == 7  # the table and six points, none failed
    assert got["compiled"] == got["pure"]
