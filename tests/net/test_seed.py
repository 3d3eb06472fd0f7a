"""A real-time run seeds each switch's random draws (ECN marking, spraying) as virtual
time does: switch_seed(run seed, device id), carried from EmuNet to the daemon's
command line and into its options. Before, every daemon drew from seed 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from emu.core.seeds import switch_seed
from emu.net import EmuNet
from emu.switch.commands import build_parser, options_from_args
from emu.targets.embedded import daemon_command
from emu.topo import load_topology

from .conftest import Snapshot, needs_mininet
from .helpers import LOCK_WAIT_S
from .standin import PIPELINE, SleepTarget

pytestmark = [needs_mininet, pytest.mark.timeout(90)]


@pytest.mark.parametrize("seed", [None, 5])
def test_each_switch_gets_the_runs_switch_seed(seed: int | None, state_dir: Path,
                                               snapshot: Snapshot, tmp_path: Path) -> None:
    target = SleepTarget()
    fabric = load_topology("leafspine2")
    kw = {} if seed is None else {"seed": seed}
    with EmuNet(fabric, target, tmp_path, pipeline=PIPELINE, lock_wait_s=LOCK_WAIT_S, **kw):
        specs = {p.spec.device_id: p.spec for p in target.started}
    run_seed = 1 if seed is None else seed  # a run's default seed
    assert sorted(specs) == sorted(s.device_id for s in fabric.switches)
    for dev, spec in specs.items():
        assert spec.seed == switch_seed(run_seed, dev)
        # what the embedded target launches, read back as the daemon reads it
        cmd = daemon_command(spec)
        assert cmd[1:3] == ["-m", "emu.switch"]
        opts = options_from_args(build_parser().parse_args(cmd[3:]))
        assert opts.seed == switch_seed(run_seed, dev) and opts.device_id == dev
    if seed is not None:  # another run seed: other draws on every switch
        assert all(s.seed != s.device_id for s in specs.values())
    snapshot.assert_clean()
