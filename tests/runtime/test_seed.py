"""The device seeds every pipeline it loads with its seed (the switch daemon's --seed),
so a switch's random draws (v1model `random`: ECN marking, spraying) are those of the
virtual-time switch with that seed, whatever pipeline is pushed."""

from __future__ import annotations

import random

import pytest

from emu.core.clock import VirtualClock
from emu.runtime.device import LocalDevice
from emu.runtime.translate import P4InfoIndex

from .conftest import CP_P4, compiled_config, p4info_of


@pytest.mark.parametrize("seed", [0, 7, 0x9E3779B1])
def test_a_loaded_pipeline_draws_from_the_device_seed(seed: int) -> None:
    path = CP_P4
    cfg = compiled_config(path)
    dev = LocalDevice(3, VirtualClock(), seed=seed)
    for _ in range(2):  # a second push starts from the seed again, as a new switch does
        dp = dev.prepare(P4InfoIndex.build(p4info_of(path)), cfg)
        try:
            assert dp.dataplane.sw.rng.getstate() == random.Random(seed).getstate()
        finally:
            dp.dataplane.close()
