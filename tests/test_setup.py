"""What `make setup` builds: a consistent environment, and a project that packages cleanly."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
VENV_PY = REPO / ".venv" / "bin" / "python"


def _wheel_tool():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("p4sw", REPO / "scripts" /
                                                  "p4runtime_shell_wheel.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.skipif(not VENV_PY.exists(), reason="no .venv: run `make setup` first")
def test_the_setup_environment_has_no_broken_requirements() -> None:
    # setup.sh installed p4runtime-shell with --no-deps: `pip check` failed on its pins
    # and pip printed an ERROR about them on every later install.
    r = subprocess.run([str(VENV_PY), "-m", "pip", "check"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_licence_is_an_spdx_expression_and_builds_without_deprecation(
        tmp_path: Path) -> None:
    text = (REPO / "pyproject.toml").read_text()
    assert re.search(r'^license = "Apache-2.0"', text, re.M)
    src = tmp_path / "src"
    (src / "emu").mkdir(parents=True)
    (src / "emu" / "__init__.py").write_text("")
    shutil.copy(REPO / "pyproject.toml", src)
    shutil.copy(REPO / "README.md", src)
    code = ("import setuptools.build_meta as b, sys; "
            "print(b.prepare_metadata_for_build_wheel(sys.argv[1]))")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=src,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "Deprecat" not in r.stderr, r.stderr
    meta = (tmp_path / r.stdout.strip().splitlines()[-1] / "METADATA").read_text()
    assert "License-Expression: Apache-2.0" in meta


def _fake_upstream_wheel(path: Path) -> Path:
    info = "p4runtime_shell-0.0.6.dist-info"
    files = {
        "p4runtime_sh/__init__.py": b"",
        f"{info}/METADATA": (
            b"Metadata-Version: 2.1\nName: p4runtime-shell\nVersion: 0.0.6\n"
            b"Requires-Python: >=3.6\nRequires-Dist: jedi==0.17.2\n"
            b"Requires-Dist: protobuf<3.21.0,>=3.15.0\nRequires-Dist: p4runtime==1.4.1\n"
            b"\nThe P4Runtime shell\n"),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{n},sha256=x,{len(d)}\n" for n, d in files.items()) + f"{info}/RECORD,,\n"
    wheel = path / "p4runtime_shell-0.0.6-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
        z.writestr(f"{info}/RECORD", record)
    return wheel


def test_the_rebuilt_p4runtime_shell_wheel_states_our_stack(tmp_path: Path) -> None:
    tool = _wheel_tool()
    out = tool.rebuild(_fake_upstream_wheel(tmp_path), tmp_path / "out")
    assert out.name == "p4runtime_shell-0.0.6+emu1-py3-none-any.whl"
    with zipfile.ZipFile(out) as z:
        names = set(z.namelist())
        info = "p4runtime_shell-0.0.6+emu1.dist-info"
        meta = z.read(f"{info}/METADATA").decode()
        record = z.read(f"{info}/RECORD").decode().splitlines()
        assert "p4runtime_sh/__init__.py" in names
        for row in record:  # every file hashed as installers check it
            name, digest, size = row.split(",")
            if name.endswith("RECORD"):
                assert (digest, size) == ("", "")
                continue
            data = z.read(name)
            want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            assert (digest, int(size)) == (f"sha256={want.decode()}", len(data)), name
    assert "Version: 0.0.6+emu1\n" in meta and "The P4Runtime shell" in meta
    requires = re.findall(r"^Requires-Dist: (.*)$", meta, re.M)
    assert requires == tool.REQUIRES
    # The ranges it states for the shared stack are pyproject's own.
    pyproject = (REPO / "pyproject.toml").read_text()
    for name in ("p4runtime", "protobuf"):
        (ours,) = re.findall(rf'^    "({name}[<>=][^"]*)",$', pyproject, re.M)
        assert ours in requires, name


def test_make_run_passes_the_default_flow_control() -> None:
    """FC is make's built-in Fortran compiler variable ("f77"): `make run` without FC=
    must pass --flow-control none, not f77 (a real user's first `make run` failed so)."""
    import subprocess

    out = subprocess.run(["make", "-n", "run"], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1], timeout=60).stdout
    assert "--flow-control none" in out and "f77" not in out
    fc = subprocess.run(["make", "-n", "run", "FC=pfc"], capture_output=True, text=True,
                        cwd=Path(__file__).resolve().parents[1], timeout=60).stdout
    assert "--flow-control pfc" in fc
