"""Experiments: `emu run` (fabric + workload + metrics + results), `emu calibrate`, and the
cleanup of killed runs (`state.py`, `emu stop`). See README.md in this package."""
