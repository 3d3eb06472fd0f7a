"""The `emu` command line, run as a user would (`python -m emu ...`)."""

import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PYTHON = str(REPO / ".venv" / "bin" / "python") if (REPO / ".venv").exists() else sys.executable


def emu(
    *args: str, env: dict[str, str] | None = None, cwd: Path = REPO
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [PYTHON, "-m", "emu", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=full_env,
    )


def test_help_lists_topo() -> None:
    r = emu("--help")
    assert r.returncode == 0
    assert "topo" in r.stdout


def test_no_command_is_usage_error() -> None:
    r = emu()
    assert r.returncode == 2
    assert "usage" in r.stderr


@pytest.mark.parametrize(
    ("name", "summary"),
    [
        ("clos4", "ok: 8 switches, 8 hosts, 24 links"),
        ("fattree4", "ok: 20 switches, 16 hosts, 48 links"),
        ("leafspine2", "ok: 4 switches, 4 hosts, 9 links"),
    ],
)
def test_check_shipped(name: str, summary: str) -> None:
    r = emu("topo", "check", name)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == summary


def test_check_by_path_from_elsewhere(tmp_path: Path) -> None:
    r = emu("topo", "check", str(REPO / "topologies" / "clos4.yaml"), cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("ok: 8 switches")


def test_check_reports_errors_without_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\ngenerator: fattree\nparams:\n  k: 5\n  spine: 3\n")
    r = emu("topo", "check", str(bad))
    assert r.returncode == 1
    assert r.stdout == ""
    assert f"{bad}:5:3: unknown key 'spine'" in r.stderr
    assert "Traceback" not in r.stderr
    assert "1 error" in r.stderr


def test_check_reports_all_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "switches:\n  - {name: s1, role: leaf}\n  - {name: s1, role: leaf}\n"
        "hosts: [{name: h1}]\nlinks:\n  - {a: h1, b: s9}\n"
    )
    r = emu("topo", "check", str(bad))
    assert r.returncode == 1
    lines = r.stderr.splitlines()
    assert lines[0] == f"{bad}:3:12: duplicate node name 's1' (first defined at line 2)"
    assert lines[1].startswith(f"{bad}:6:16: link endpoint 's9' is not a declared switch or host")
    assert lines[-1] == "2 errors"


def test_unknown_topology_is_clean_error() -> None:
    for cmd in ("check", "show", "draw"):
        r = emu("topo", cmd, "no_such_topo")
        assert r.returncode == 1, cmd
        assert "no_such_topo: no such topology" in r.stderr
        assert "clos4" in r.stderr  # lists known names
        assert "Traceback" not in r.stderr


def test_show_clos4() -> None:
    r = emu("topo", "show", "clos4")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    for text in (
        "clos4: 8 switches, 8 hosts, 24 links",
        "spine4",
        "10.0.4.2/24",
        "02:00:00:00:04:02",
        "leaf1-eth3",
        "100Gbps",
        "1us",
        "equal-cost paths: 4 paths: 12 leaf pairs",
    ):
        assert text in out, text


def test_show_fattree_paths() -> None:
    r = emu("topo", "show", "fattree4")
    assert r.returncode == 0, r.stderr
    # 8 edges: each has 1 same-pod peer (2 paths) and 6 other-pod peers (4 paths)
    assert "equal-cost paths: 2 paths: 8 leaf pairs; 4 paths: 48 leaf pairs" in r.stdout
    assert "core" in r.stdout and "c4" in r.stdout


def test_show_json() -> None:
    import json

    r = emu("topo", "show", "leafspine2", "--json")
    assert r.returncode == 0
    d = json.loads(r.stdout)
    assert [s["name"] for s in d["switches"]] == ["leaf1", "leaf2", "spine1", "spine2"]


def test_env_topologies_dir(tmp_path: Path) -> None:
    (tmp_path / "tiny.yaml").write_text(
        "generator: clos\nparams: {leaves: 2, spines: 1, hosts_per_leaf: 1}\n"
    )
    r = emu("topo", "check", "tiny", env={"EMU_TOPOLOGIES": str(tmp_path)})
    assert r.returncode == 0 and r.stdout.strip() == "ok: 3 switches, 2 hosts, 4 links"


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.mark.parametrize("name", ["clos4", "fattree4", "leafspine2"])
def test_draw_png(tmp_path: Path, name: str) -> None:
    out = tmp_path / f"{name}.png"
    r = emu("topo", "draw", name, "-o", str(out))
    assert r.returncode == 0, r.stderr
    data = out.read_bytes()
    width, height = _png_size(data)
    assert width >= 800 and height >= 600
    assert len(data) > 10_000  # an actual picture, not an empty canvas


def test_console_script_entry_point() -> None:
    from emu.cli import COMMAND_GROUPS, build_parser, main

    assert ("topo", "emu.topo.commands:register") in COMMAND_GROUPS
    args = build_parser().parse_args(["topo", "check", "clos4"])
    assert args.func.__name__ == "cmd_check"
    assert main(["topo", "check", "clos4"]) == 0


# The same files, checked by `emu topo check` and by `emu run` (with the run's link rate
# applied, or the topology's): the same report, every problem at once, at the positions
# of the user's file (not of a copy re-dumped to apply the rate).
UNCLOSED_FLOW = """\
name: syn
switches:
  - {name: leaf1, role: leaf}
  - {name: spine1, role: spine
hosts:
  - {name: h1}
links:
  - {a: h1, b: leaf1}
"""
SEVERAL = """\
# comments shift every line of the file against a re-dumped copy
name: bad

defaults:
  rate: 20Mbps
switches:
  - {name: leaf1, role: leaf}
  - {name: spine1, role: spinee}
hosts:
  - {name: h1}
links:
  - {a: h1, b: leaf1, rate: 10Mbsp}
  - {a: leaf1, b: spine1}
  - {a: leaf1, b: spine9}
"""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            UNCLOSED_FLOW,
            [
                "5:6: YAML syntax error: expected ',' or '}', but got ':' "
                "(while parsing a flow mapping at line 4, column 5)",
                "1 error",
            ],
        ),
        (
            SEVERAL,
            [
                "8:26: role: expected one of leaf, spine, core, got 'spinee'",
                "12:29: rate: bad rate '10Mbsp': expected a number and a unit "
                "(bps, Kbps, Mbps, Gbps, Tbps)",
                "14:19: link endpoint 'spine9' is not a declared switch or host "
                "(did you mean 'spine1'?)",
                "3 errors",
            ],
        ),
    ],
    ids=["yaml-syntax", "several"],
)
@pytest.mark.parametrize(
    "command",
    [
        ("topo", "check", "FILE"),
        ("run", "FILE", "--dry-run", "--rate", "2Mbps"),
        ("run", "FILE", "--dry-run"),
        ("run", "FILE", "--dry-run", "--dilation", "1000"),
    ],
    ids=["topo-check", "run-rate", "run-default-rate", "run-dilation"],
)
def test_run_and_check_report_the_same_errors(
    tmp_path: Path, text: str, expected: list[str], command: tuple[str, ...]
) -> None:
    f = tmp_path / "t.yaml"
    f.write_text(text)
    r = emu(*(str(f) if arg == "FILE" else arg for arg in command))
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    want = [f"{f}:{line}" for line in expected[:-1]] + expected[-1:]
    assert r.stderr.splitlines() == want


@pytest.mark.parametrize("args, says", [
    (["--generate", "-3"], "argument --generate: must be 1..1000000, got -3"),
    (["--settle-ms", "nan"], "argument --settle-ms: must be a finite number > 0"),
    (["--ports", "1,600"], "argument --ports: must be 0..510"),
    (["--ports", "a,b"], "argument --ports: not an integer: 'a'"),
])
def test_crosscheck_options_are_checked(args: list[str], says: str) -> None:
    # --generate -3 compared 0 packets and called it agreement; --ports a,b was ignored
    # without --entries and a traceback with it; --settle-ms nan reached the switch.
    r = emu("crosscheck", *args)
    assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr


def test_unwritable_outputs_are_one_line(tmp_path: Path) -> None:
    # Each of these was a FileNotFoundError / FileExistsError traceback.
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    r = emu("topo", "draw", "clos4", "--output", str(tmp_path / "no" / "such" / "x.png"))
    assert r.returncode == 1 and "emu topo draw: cannot write" in r.stderr
    assert "Traceback" not in r.stderr
    r = emu("run", "clos4", "--virtual", "--no-progress", "--results", str(a_file))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.strip().endswith(f"cannot make a run folder under {a_file}: not a folder")
    r = emu("experiment", str(REPO / "experiments" / "lb-modes.yaml"), "--results", str(a_file))
    assert r.returncode == 1 and "emu experiment: cannot write under" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("args, says", [
    (["--rates", ","], "argument --rates: expected comma-separated rates"),
    (["--size", "0"], "argument --size: a size must be 1 byte"),
])
def test_calibrate_options_are_checked(args: list[str], says: str) -> None:
    # `--rates ,` tried nothing and said no rate was faithful; `--size 0` was a traceback.
    r = emu("calibrate", "clos4", *args)
    assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr
