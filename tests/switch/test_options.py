"""The switch daemon's queue and link settings from its command line and --port-config:
what the traffic manager or the port senders would fail on later (a NaN delay, a rate
that rounds to "no limit", a port named by a word) is refused at start with one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emu.switch.commands import build_parser, options_from_args
from emu.switch.options import PortSettings, check_setting


def _options(*argv: str):  # type: ignore[no-untyped-def]
    return options_from_args(build_parser().parse_args(["--no-p4", *argv]))


@pytest.mark.parametrize("argv, why", [
    (("--queue-depth", "x=5"), "invalid literal"),
    (("--queue-depth", "2=-3"), "depth_pkts must be an integer"),
    (("--queue-depth", "2=1.5"), "invalid literal"),
    (("--queue-rate-bps", "1e-300"), "below 1"),
    (("--queue-rate-pps", "3=1e300"), "rate_pps must be a number"),
    (("--link-delay-us", "nan"), "delay_us must be a number"),
    (("--link-delay-us", "2=inf"), "delay_us must be a number"),
    (("--queue-depth=-2=5",), "ports are 0..510"),
    (("--queue-depth", "600=5"), "ports are 0..510"),
])
def test_bad_settings_on_the_command_line_are_one_line_errors(argv: tuple[str, ...],
                                                               why: str) -> None:
    with pytest.raises(SystemExit) as ei:
        _options(*argv)
    assert str(ei.value).startswith("error: bad [PORT=]VALUE") and why in str(ei.value)


@pytest.mark.parametrize("cfg, why", [
    ({"default": {"rate_bps": "x"}}, "rate_bps must be a number"),
    ({"default": {"delay_us": -1}}, "delay_us must be a number"),
    ({"ports": {"2": {"depth_pkts": True}}}, "depth_pkts must be an integer"),
    ({"ports": {"2": {"rate_bps": 1000, "rate_pps": 10}}}, "not both"),
    ({"ports": {"2": {"bogus": 1}}}, "bogus"),
    ({"ports": {"a": {}}}, "invalid literal"),
    ({"ports": {"511": {}}}, "port 511: ports are 0..510"),
    ([1], "expected a JSON object"),
])
def test_bad_port_config_files_are_one_line_errors(tmp_path: Path, cfg: object,
                                                   why: str) -> None:
    f = tmp_path / "ports.json"
    f.write_text(json.dumps(cfg))
    with pytest.raises(SystemExit) as ei:
        _options("--port-config", str(f))
    assert str(ei.value).startswith(f"error: --port-config {f}") and why in str(ei.value)


@pytest.mark.parametrize("text, why", [
    ('{"links": {"2": [1.0, Infinity, 1]}}', "cannot convert float infinity"),
    ('{"links": ' + "[" * 100_000 + "]" * 100_000 + "}", "recursion"),
])
def test_bad_pfc_config_is_one_line_error(text: str, why: str) -> None:
    """Infinity (which Python's JSON reads) raised OverflowError and deep nesting
    RecursionError: tracebacks instead of one line."""
    with pytest.raises(SystemExit) as ei:
        _options("--pfc-config", text)
    assert str(ei.value).startswith("error: --pfc-config") and why in str(ei.value)


def test_port_config_nested_past_the_json_parser_is_one_line_error(tmp_path: Path) -> None:
    f = tmp_path / "ports.json"
    f.write_text('{"ports": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(SystemExit) as ei:
        _options("--port-config", str(f))
    assert str(ei.value).startswith(f"error: --port-config {f}")


@pytest.mark.parametrize("argv, says", [
    (("-i", "600@lo"), "error: bad -i '600@lo': ports are 0..510"),
    (("-i", "511@lo"), "error: bad -i '511@lo': ports are 0..510"),
])
def test_a_port_past_9_bits_is_refused(argv: tuple[str, ...], says: str) -> None:
    # -i 600@lo started a switch with a port no egress_spec can name
    with pytest.raises(SystemExit) as ei:
        _options(*argv)
    assert str(ei.value).startswith(says)


@pytest.mark.parametrize("argv, says", [
    (("--cpu-port", "999"), "argument --cpu-port: must be 0..510"),
    (("--device-id", "-1"), "argument --device-id: must be 0..18446744073709551615"),
    (("--priority-queues", "9"), "argument --priority-queues: must be 1..8"),
    (("--timer-spin-us", "nan"), "argument --timer-spin-us: must be a finite number >= 0"),
    # a level logging does not know logged at INFO, silently
    (("--log-level", "bogus"), "argument --log-level: invalid choice: 'BOGUS'"),
])
def test_bad_numbers_are_refused_by_the_parser(argv: tuple[str, ...], says: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    # each of these started a switch (a device id of -1, 9 priority queues)
    with pytest.raises(SystemExit) as ei:
        build_parser().parse_args(["--no-p4", *argv])
    assert ei.value.code == 2 and says in capsys.readouterr().err


def test_good_settings_still_load(tmp_path: Path) -> None:
    f = tmp_path / "ports.json"
    f.write_text(json.dumps({"default": {"depth_pkts": 32},
                             "ports": {"2": {"rate_bps": 8e6, "delay_us": 10}}}))
    o = _options("--port-config", str(f), "--queue-depth", "3=7")
    assert o.default_port == PortSettings(depth_pkts=32)
    assert o.ports[2] == PortSettings(rate_bps=8e6, depth_pkts=32, delay_us=10)
    assert o.ports[3].depth_pkts == 7
    assert check_setting("rate_pps", 0) == 0  # 0: no limit
    assert check_setting("rate_bps", None) is None


def test_a_log_file_that_cannot_be_opened_is_one_line(tmp_path: Path) -> None:
    """--log-file in a folder that is not there ended the daemon in a traceback."""
    from emu.switch.daemon import setup_logging

    with pytest.raises(SystemExit) as ei:
        setup_logging(False, str(tmp_path / "no" / "switch.log"), "INFO")
    assert str(ei.value) == f"error: --log-file {tmp_path}/no/switch.log: No such file or directory"


def test_a_grpc_port_past_16_bits_is_refused() -> None:
    """gRPC listened on port 99999 modulo 2^16 (34463) and the daemon said READY."""
    from emu.core.clock import RealClock
    from emu.runtime.device import LocalDevice
    from emu.runtime.server import P4RuntimeServer

    clock = RealClock()
    server = P4RuntimeServer(LocalDevice(1, clock))
    try:
        with pytest.raises(OSError, match=r"cannot listen on 127.0.0.1:99999: a TCP port is "
                                          r"0\.\.65535"):
            server.start("127.0.0.1:99999")
    finally:
        server.stop()
        clock.close()


def test_compiled_configs_are_taken_only_when_the_switch_is_told_to_trust_its_clients() -> None:
    """A compiled program is Python the switch runs (tests/runtime/test_devconfig_trust.py):
    off unless asked for, and the option reaches the device."""
    from emu.switch.daemon import SwitchDaemon

    assert _options().trust_compiled_configs is False
    opts = _options("--trust-compiled-configs")
    assert opts.trust_compiled_configs is True
    assert SwitchDaemon(opts).device.trust_compiled is True
    assert SwitchDaemon(_options()).device.trust_compiled is False
