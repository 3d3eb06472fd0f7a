"""Experiments: `emu run` (fabric + workload + metrics) and the cleanup of killed runs."""
