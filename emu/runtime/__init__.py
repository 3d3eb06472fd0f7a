"""P4Runtime for the embedded v1model target: server, device interface, clients.

- server.py: p4.v1.P4Runtime over gRPC, serving one Device.
- device.py: the device interface (what the server needs from a switch).
- devconfig.py: the p4_device_config formats this target accepts.
- p4switch_adapter.py: the Dataplane over the compiled switch (emu.p4.api.P4Switch).
- translate.py: P4Runtime <-> engine encodings; errors.py: status codes.
- arbitration.py: primary election per (device, role), role configs kept per role.
- roles.py: role configs (stratum.P4RoleConfig) and what they allow.
- digests.py: DigestEntry configs, digest list batching, dedup cache, acks, timeouts.
- atomicity.py: Write batches under each WriteRequest.Atomicity (undo by inverse updates).
- valuesets.py: ValueSetEntry (parser value sets) writes and reads.
- reconcile.py: RECONCILE_AND_COMMIT to a different program (state carried by name).
- admin.py: the JSON-lines admin protocol (queue rate/depth, link delay, stats).
- client.py: a thin P4Runtime client, one object per switch.
See README.md for the daemon, the formats and the protocol.
"""
