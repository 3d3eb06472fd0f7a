"""The VM path's files, as far as they can be checked without a VM: shell syntax
(and shellcheck when installed), Vagrantfile syntax (ruby -c when installed),
the make targets' commands, and the batch experiment runner (run for real with
`emu run` on the embedded target)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VAGRANT = ROOT / "vagrant"
SCRIPTS = ["provision.sh", "in-vm.sh", "run-experiments.sh"]


def _runner():
    spec = importlib.util.spec_from_file_location("run_experiments", VAGRANT / "run_experiments.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


R = _runner()


@pytest.mark.parametrize("script", SCRIPTS)
def test_shell_syntax(script):
    path = VAGRANT / script
    assert path.stat().st_mode & 0o111, f"{script} is not executable"
    r = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed")
def test_shellcheck():
    r = subprocess.run(["shellcheck", *(str(VAGRANT / s) for s in SCRIPTS)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout


@pytest.mark.skipif(shutil.which("ruby") is None, reason="ruby not installed")
def test_vagrantfile_syntax():
    r = subprocess.run(["ruby", "-c", str(VAGRANT / "Vagrantfile")], capture_output=True,
                       text=True)
    assert r.returncode == 0 and "Syntax OK" in r.stdout, r.stderr


def test_vagrantfile_facts():
    text = (VAGRANT / "Vagrantfile").read_text()
    assert "bento/ubuntu-22.04" in text
    assert '"EMU_VM_CPUS", "4"' in text and '"EMU_VM_MEMORY_MB", "8192"' in text
    assert 'synced_folder "..", "/vagrant"' in text
    prov = (VAGRANT / "provision.sh").read_text()
    for pkg in ("p4lang-p4c", "p4lang-bmv2", "p4lang-pi", "mininet"):
        assert pkg in prov
    assert "home:/p4lang/xUbuntu_${VERSION_ID}" in prov and "Release.key" in prov
    assert "make -C \"$PROJECT\" setup" in prov


def make_n(*args: str) -> str:
    r = subprocess.run(["make", "-n", "-f", "Makefile", "-f", "vagrant/vm.mk", *args],
                       capture_output=True, text=True, cwd=str(ROOT))
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")
def test_vm_make_targets():
    assert "vagrant up" in make_n("vm")
    assert "vagrant halt" in make_n("vm-stop")
    assert "in-vm.sh test -k bmv2" in make_n("vm-test", "PYTEST_ARGS=-k bmv2")
    run = make_n("vm-run", "TOPO=fattree4")
    assert "in-vm.sh run fattree4 --lb ecmp" in run and "--target bmv2" in run
    assert "--target embedded" in make_n("vm-run", "TOPO=clos4", "TARGET=embedded")
    assert "in-vm.sh experiments vagrant/experiments/lb-compare.yaml" in make_n("vm-experiments")


def test_example_batch_loads():
    batch = R.load_batch(VAGRANT / "experiments" / "lb-compare.yaml")
    assert batch["name"] == "lb-compare"
    names = [r["name"] for r in batch["runs"]]
    assert names[:2] == ["ecmp-r1", "ecmp-r2"] and len(names) == 10
    spray = next(r for r in batch["runs"] if r["name"] == "spray-sr-r1")
    assert R.command(spray, "py") == ["py", "-m", "emu", "run", "clos4", "--lb", "spray",
                                      "--cc", "dcqcn", "--recovery", "sr", "--workload",
                                      "allreduce", "--target", "bmv2"]


@pytest.mark.parametrize(("text", "problem"), [
    ("runs: []\n", "non-empty `runs`"),
    ("runs: [{lb: ecmp}]\n", "no topo"),
    ("defaults: {topo: clos4}\nruns: [{lb: ecmp, color: red}]\n", "unknown keys ['color']"),
    ("defaults: {topo: clos4}\nruns: [{name: a}, {name: a}]\n", "duplicate run names"),
    ("runs: [\n", "while parsing"),
])
def test_bad_batches(tmp_path, text, problem):
    f = tmp_path / "b.yaml"
    f.write_text(text)
    with pytest.raises(R.BatchError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        R.load_batch(f)


def test_batch_runs_and_collects(tmp_path, monkeypatch):
    # The batch runner's own logic (sequencing, exit codes, moving each run's results
    # folder, collecting): `emu run` itself is exercised by the end-to-end tests, so
    # here a small interpreter stand-in plays it, writing a results folder like it.
    results, collect = tmp_path / "results", tmp_path / "shared"
    results.mkdir()
    fake = tmp_path / "fake-python"
    fake.write_text(
        "#!/bin/sh\n"
        "# argv: -m emu run TOPO --lb MODE ...\n"
        'echo "topology $4"\n'
        'if [ "$6" = ecmp ]; then mkdir -p "$EMU_FAKE_RESULTS/run-$6"; exit 0; fi\n'
        'echo "emu run: error: bad --lb $6" >&2; exit 2\n')
    fake.chmod(0o755)
    monkeypatch.setenv("EMU_FAKE_RESULTS", str(results))
    f = tmp_path / "mini.yaml"
    f.write_text("name: mini\ndefaults: {topo: clos4, target: embedded}\n"
                 "runs:\n  - {name: a, lb: ecmp}\n  - {name: b, lb: nosuchmode}\n")
    rc = R.run_batch(R.load_batch(f), results, collect, python=str(fake))
    assert rc == 1  # run b failed
    summary = json.loads((collect / "experiments/mini/summary.json").read_text())
    assert [(s["name"], s["exit_code"]) for s in summary] == [("a", 0), ("b", 2)]
    a = collect / "experiments/mini/a"
    assert (a / "exit_code").read_text() == "0\n"
    assert (a / "run-ecmp").is_dir()  # the run's results folder moved under the run
    assert "topology clos4" in (a / "log.txt").read_text()
    assert (a / "command.txt").read_text().startswith("emu run clos4 --lb ecmp")
    assert "bad --lb" in (collect / "experiments/mini/b/log.txt").read_text()


def test_dry_run_and_only(tmp_path, capsys):
    assert R.main([str(VAGRANT / "experiments/lb-compare.yaml"), "--dry-run",
                   "--only", "flowlet-r1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ["flowlet-r1: emu run clos4 --lb flowlet --cc dcqcn --recovery gbn "
                   "--workload allreduce --target bmv2"]
    assert R.main([str(VAGRANT / "experiments/lb-compare.yaml"), "--only", "nope"]) == 2
