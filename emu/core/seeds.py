"""Seeds derived from a run's seed, shared by virtual time and real time so that one
run seeds the same randomness in both."""

from __future__ import annotations

__all__ = ["switch_seed"]


def switch_seed(run_seed: int, device_id: int) -> int:
    """The seed of a switch's random draws (v1model `random`: ECN marking, spraying) in a
    run: its device id perturbed by the run's seed, so that runs with other seeds see
    other marking draws (experiments' error bars over seeds include them); seed 1, the
    default, keeps the device id."""
    return device_id ^ (((run_seed - 1) * 0x9E3779B1) & 0xFFFF_FFFF)
