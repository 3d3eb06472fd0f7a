"""The embedded v1model P4 target: front end, runtime library, STF tests."""
