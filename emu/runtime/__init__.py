"""P4Runtime for the embedded v1model target: server, device interface, clients.

- server.py: p4.v1.P4Runtime over gRPC, serving one Device (the RPC layer).
- entities/: one module per entity kind, each with its write and read.
- pipeline.py, pipeline_config.py: the pipeline the server addresses;
  SetForwardingPipelineConfig's actions. stream.py: StreamChannel.
- device.py: the device interface (what the server needs from a switch);
  dataplane.py: the Dataplane / ControlPlane interfaces; infoplane.py: a control
  plane from a P4Info alone (emu-null-v1).
- devconfig.py: the p4_device_config formats this target accepts (P4 sources from any
  client, compiled programs from trusted ones); sourcebundle.py: a p4-source bundle
  written out for the switch to compile (docs/security.md).
- p4switch_adapter.py: the Dataplane over the compiled switch (emu.p4.api.P4Switch).
- translate.py: P4Runtime <-> engine encodings; errors.py: status codes;
  malformed.py: requests that are not protobuf, refused in one line.
- arbitration.py: primary election per (device, role), role configs kept per role.
- roles.py: role configs (stratum.P4RoleConfig) and what they allow.
- digests.py: DigestEntry configs, digest list batching, dedup cache, acks, timeouts.
- atomicity.py: Write batches under each WriteRequest.Atomicity (undo by inverse updates).
- reconcile.py: RECONCILE_AND_COMMIT to a different program (state carried by name).
- admin.py: the JSON-lines admin protocol (queue rate/depth, link delay, stats).
- client.py: a thin P4Runtime client, one object per switch.
See README.md for the daemon, the formats and the protocol.

Imports: emu.p4, emu.roce, emu.topo, emu.core. Layer 4 of the package layers that
pyproject.toml's import-linter contracts enforce; nothing above it.
"""
