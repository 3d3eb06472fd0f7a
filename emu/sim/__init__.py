"""Virtual-time fabric: embedded P4 switches, in-memory links and simple hosts on one
VirtualClock, programmed by the fabric controller (see emu.sim.fabric.SimFabric).

Imports: emu.control, emu.switch, emu.runtime and the layers below them. Layer 7 of the
package layers that pyproject.toml's import-linter contracts enforce; nothing above it."""
