"""Runtime library of the embedded v1model target: what generated pipelines call into.

- `hashes`: BMv2's hash algorithms, field packing, v1model `hash()`.
- `checksum`: verify_checksum / update_checksum helpers.
- `traffic_manager`: per-port egress queues on the shared Clock.
- `replication`: multicast groups and clone sessions.
- `stateful`: registers, counters, meters.
"""
