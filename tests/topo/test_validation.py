"""Every validation error kind, with the exact 1-based line:col it is reported at."""

from pathlib import Path

import pytest

from emu.topo import TopologyError, load_topology

BASE = """\
name: t
switches:
  - {name: s1, role: leaf}
hosts:
  - {name: h1}
links:
  - {a: h1, b: s1:1}
"""


def errors(tmp_path: Path, text: str) -> list[tuple[int, int, str]]:
    f = tmp_path / "t.yaml"
    f.write_text(text)
    with pytest.raises(TopologyError) as info:
        load_topology(f)
    exc = info.value
    for d in exc.diagnostics:
        assert d.mark.file == str(f)
        assert str(d).startswith(f"{f}:{d.mark.line}:{d.mark.col}: ")
    return [(d.mark.line, d.mark.col, d.message) for d in exc.diagnostics]


def one(tmp_path: Path, text: str) -> tuple[int, int, str]:
    errs = errors(tmp_path, text)
    assert len(errs) == 1, errs
    return errs[0]


def test_base_is_valid(tmp_path: Path) -> None:
    f = tmp_path / "ok.yaml"
    f.write_text(BASE)
    assert load_topology(f).summary() == "1 switches, 1 hosts, 1 links"


def test_error_str_and_fields(tmp_path: Path) -> None:
    f = tmp_path / "t.yaml"
    f.write_text(BASE.replace("name: t", "nmae: t"))
    with pytest.raises(TopologyError) as info:
        load_topology(f)
    e = info.value
    assert (e.file, e.line, e.col) == (str(f), 1, 1)
    assert str(e) == f"{f}:1:1: {e.message}"


def test_unknown_top_key_suggests(tmp_path: Path) -> None:
    line, col, msg = one(tmp_path, BASE.replace("name: t", "nmae: t"))
    assert (line, col) == (1, 1)
    assert "unknown key 'nmae'" in msg and "did you mean 'name'" in msg


def test_unknown_link_key_suggests(tmp_path: Path) -> None:
    text = BASE.replace("{a: h1, b: s1:1}", "{a: h1, b: s1:1, rat: 1Mbps}")
    assert one(tmp_path, text)[:2] == (7, 22)
    assert "did you mean 'rate'" in one(tmp_path, text)[2]


def test_unknown_key_without_close_match_lists_valid(tmp_path: Path) -> None:
    text = BASE.replace("{name: h1}", "{name: h1, colour: red}")
    line, col, msg = one(tmp_path, text)
    assert (line, col) == (5, 16)
    assert "valid keys: name, mtu" in msg


def test_missing_field(tmp_path: Path) -> None:
    line, col, msg = one(tmp_path, BASE.replace("{name: s1, role: leaf}", "{name: s1}"))
    assert (line, col) == (3, 5)  # the mapping that lacks the key
    assert "missing required key 'role' in switch" in msg


def test_missing_link_end(tmp_path: Path) -> None:
    line, col, msg = one(tmp_path, BASE.replace("{a: h1, b: s1:1}", "{a: h1}"))
    assert (line, col) == (7, 5)
    assert "missing required key 'b'" in msg


def test_bad_rate_unit(tmp_path: Path) -> None:
    text = BASE.replace("{a: h1, b: s1:1}", "{a: h1, b: s1:1, rate: 10Mbs}")
    line, col, msg = one(tmp_path, text)
    assert (line, col) == (7, 28)
    assert "rate" in msg and "10Mbs" in msg


def test_bad_delay_unit_in_defaults(tmp_path: Path) -> None:
    text = BASE + "defaults:\n  delay: 20 parsecs\n"
    assert one(tmp_path, text)[:2] == (9, 10)


def test_delay_without_unit(tmp_path: Path) -> None:
    text = BASE + "defaults:\n  delay: 20\n"
    line, col, msg = one(tmp_path, text)
    assert (line, col) == (9, 10) and "needs a unit" in msg


def test_negative_values(tmp_path: Path) -> None:
    text = BASE + "defaults:\n  queue_depth_pkts: -1\n  delay: -5us\n  rate: -1Gbps\n"
    errs = errors(tmp_path, text)
    assert [(e[0], e[1]) for e in errs] == [(9, 21), (10, 10), (11, 9)]
    assert "must be >= 1" in errs[0][2]
    assert "must not be negative" in errs[1][2]
    assert "must be positive" in errs[2][2]


def test_bad_mtu(tmp_path: Path) -> None:
    line, col, msg = one(tmp_path, BASE.replace("{name: h1}", "{name: h1, mtu: 100}"))
    assert (line, col) == (5, 21) and "576" in msg


def test_bad_role(tmp_path: Path) -> None:
    line, col, msg = one(tmp_path, BASE.replace("role: leaf", "role: tor"))
    assert (line, col) == (3, 22) and "leaf, spine, core" in msg


def test_fattree_odd_k(tmp_path: Path) -> None:
    text = "name: ft\ngenerator: fattree\nparams:\n  k: 3\n"
    line, col, msg = one(tmp_path, text)
    assert (line, col) == (4, 6) and "k must be even" in msg


@pytest.mark.parametrize("params, at, says", [
    ("k: 1000", (4, 6), "k=1000 makes 250000000 hosts; a generated fabric has at most 65536 "
                        "(k <= 64)"),
    ("k: 66", (4, 6), "k=66 makes 71874 hosts"),
    ("leaves: 1000000\n  spines: 2\n  hosts_per_leaf: 2", (4, 11),
     "1000000 leaves exceed the addressing plan's 65535"),

    ("leaves: 4\n  spines: 100000\n  hosts_per_leaf: 2", (5, 11),
     "a leaf would have 2 host ports and 100000 uplinks"),
    ("leaves: 4\n  spines: 2\n  hosts_per_leaf: 100000", (6, 19),
     "100000 hosts per leaf exceed the addressing plan's 253"),
    ("leaves: 200\n  spines: 2\n  hosts_per_leaf: 1\n  uplinks_per_spine: 3", (4, 11),
     "a spine would have 600 ports"),
    # its port 255, the CPU port, took leaf 128's first uplink: a black hole
    ("leaves: 128\n  spines: 2\n  hosts_per_leaf: 1\n  uplinks_per_spine: 2", (4, 11),
     "a spine would have 256 ports; a generated switch has ports 1..254 (the next is the "
     "CPU port)"),
])
def test_a_generator_too_large_is_refused_before_it_runs(tmp_path: Path, params: str,
                                                         at: tuple[int, int], says: str) -> None:
    # fattree k: 1000 or a clos of a million leaves took minutes and gigabytes (17 GB for
    # k: 100000) to build the fabric only to refuse it.
    gen = "fattree" if params.startswith("k:") else "clos"
    line, col, msg = one(tmp_path, f"name: big\ngenerator: {gen}\nparams:\n  {params}\n")
    assert (line, col) == at and says in msg


def test_generator_unknown_param(tmp_path: Path) -> None:
    text = "generator: clos\nparams:\n  leaves: 2\n  spines: 2\n  host_per_leaf: 1\n"
    errs = errors(tmp_path, text)
    assert (5, 3) in [(e[0], e[1]) for e in errs]
    assert any("did you mean 'hosts_per_leaf'" in e[2] for e in errs)
    assert any("missing required key 'hosts_per_leaf'" in e[2] for e in errs)


def test_unknown_generator(tmp_path: Path) -> None:
    line, col, msg = one(tmp_path, "generator: fatree\nparams: {k: 4}\n")
    assert (line, col) == (1, 12) and "did you mean 'fattree'" in msg


@pytest.mark.parametrize("value", ["[]", "{a: 1}", "[clos]"])
def test_generator_that_is_not_a_name(tmp_path: Path, value: str) -> None:
    # A list or a mapping here raised TypeError (unhashable) out of the loader.
    line, col, msg = one(tmp_path, f"generator: {value}\nparams: {{k: 4}}\n")
    assert (line, col) == (1, 12) and "unknown generator" in msg and "valid: clos" in msg


@pytest.mark.parametrize(("text", "where", "code"), [
    ("name: t\n  desc\x00ription: y\n", (2, 7), "U+0000"),
    ("\x07name: t\n", (1, 1), "U+0007"),
    (BASE + "# \x1b[31m\n", (8, 3), "U+001B"),
])
def test_a_character_yaml_forbids_is_a_located_syntax_error(
        tmp_path: Path, text: str, where: tuple[int, int], code: str) -> None:
    # PyYAML's ReaderError (raised while the loader is built) escaped as a traceback.
    line, col, msg = one(tmp_path, text)
    assert (line, col) == where and "YAML syntax error" in msg and code in msg, msg


def test_generator_with_explicit_nodes(tmp_path: Path) -> None:
    text = "generator: fattree\nparams: {k: 4}\nswitches: []\n"
    line, col, msg = one(tmp_path, text)
    assert (line, col) == (3, 1) and "cannot be combined" in msg


def test_clos_bad_oversubscription(tmp_path: Path) -> None:
    text = (
        "generator: clos\nparams: {leaves: 2, spines: 2, hosts_per_leaf: 1, oversubscription: -2}\n"
    )
    line, col, msg = one(tmp_path, text)
    assert (line, col) == (2, 69) and "must be positive" in msg


def test_clos_oversubscription_nan(tmp_path: Path) -> None:
    # .nan passed the `<= 0` check and failed in Fraction (ValueError out of the loader).
    text = ("generator: clos\nparams: {leaves: 2, spines: 2, hosts_per_leaf: 1, "
            "oversubscription: .nan}\n")
    line, col, msg = one(tmp_path, text)
    assert (line, col) == (2, 69) and "positive and finite" in msg, msg


def test_duplicate_names(tmp_path: Path) -> None:
    text = BASE.replace("hosts:\n  - {name: h1}", "hosts:\n  - {name: h1}\n  - {name: s1}")
    errs = errors(tmp_path, text)
    assert (6, 12) in [(e[0], e[1]) for e in errs]
    assert any("duplicate node name 's1' (first defined at line 3)" in e[2] for e in errs)


def test_duplicate_yaml_key(tmp_path: Path) -> None:
    line, col, msg = one(tmp_path, BASE + "name: again\n")
    assert (line, col) == (8, 1) and "duplicate key 'name'" in msg


def test_link_to_unknown_node(tmp_path: Path) -> None:
    line, col, msg = one(tmp_path, BASE.replace("b: s1:1", "b: s2:1"))
    assert (line, col) == (7, 16)
    assert "'s2' is not a declared switch or host" in msg and "did you mean 's1'" in msg


def test_port_used_twice(tmp_path: Path) -> None:
    text = (
        BASE.replace("  - {name: h1}", "  - {name: h1}\n  - {name: h2}") + "  - {a: h2, b: s1:1}\n"
    )
    line, col, msg = one(tmp_path, text)
    assert (line, col) == (9, 16)
    assert "port s1:1 is used twice (first at line 8)" in msg


def test_bad_port_syntax(tmp_path: Path) -> None:
    line, col, msg = one(tmp_path, BASE.replace("b: s1:1", "b: s1:x"))
    assert (line, col) == (7, 16) and "port" in msg


def test_port_out_of_range(tmp_path: Path) -> None:
    line, col, msg = one(tmp_path, BASE.replace("b: s1:1", "b: s1:999"))
    assert (line, col) == (7, 16) and "out of range" in msg


def test_the_cpu_port_is_no_fabric_port(tmp_path: Path) -> None:
    """Port 255 is where a fabric switch talks to its controller (fabric.p4's CPU_PORT):
    a link on it was accepted and its traffic went to the controller, silently."""
    line, col, msg = one(tmp_path, BASE.replace("b: s1:1", "b: s1:255"))
    assert (line, col) == (7, 16) and "port 255 is the switches' CPU port" in msg
    # numbered by the loader: 255 is passed over
    spines = "".join(f"  - {{name: sp{i}, role: spine}}\n" for i in range(2, 257))
    links = "".join(f"  - {{a: s1, b: sp{i}}}\n" for i in range(2, 257))
    f = tmp_path / "many.yaml"
    f.write_text(BASE.replace("  - {name: s1, role: leaf}\n",
                              "  - {name: s1, role: leaf}\n" + spines) + links)
    s1 = load_topology(f).switch("s1")
    assert [p.number for p in s1.ports][-3:] == [254, 256, 257] and len(s1.ports) == 256


def test_disconnected(tmp_path: Path) -> None:
    text = BASE.replace(
        "  - {name: s1, role: leaf}", "  - {name: s1, role: leaf}\n  - {name: s2, role: spine}"
    )
    line, col, msg = one(tmp_path, text)
    assert (line, col) == (4, 12)
    assert "disconnected" in msg and "'s2'" in msg


def test_host_not_attached(tmp_path: Path) -> None:
    text = BASE.replace("  - {name: h1}", "  - {name: h1}\n  - {name: h2}")
    line, col, msg = one(tmp_path, text)
    assert (line, col) == (6, 12)
    assert "host 'h2' is not attached to any switch" in msg


def test_host_attached_twice(tmp_path: Path) -> None:
    text = BASE.replace(
        "  - {name: s1, role: leaf}", "  - {name: s1, role: leaf}\n  - {name: s2, role: leaf}"
    )
    text += "  - {a: h1, b: s2}\n  - {a: s1, b: s2}\n"
    line, col, msg = one(tmp_path, text)
    assert (line, col) == (9, 5)
    assert "attached to more than one switch (first link at line 8)" in msg


def test_host_on_spine(tmp_path: Path) -> None:
    line, col, msg = one(tmp_path, BASE.replace("role: leaf", "role: spine"))
    assert (line, col) == (7, 5) and "hosts attach to leaves" in msg


def test_host_to_host(tmp_path: Path) -> None:
    text = BASE.replace("  - {name: h1}", "  - {name: h1}\n  - {name: h2}") + "  - {a: h1, b: h2}\n"
    errs = errors(tmp_path, text)
    assert (9, 5, "link joins two hosts ('h1', 'h2'); hosts attach to switches") in errs


def test_host_port_must_be_zero(tmp_path: Path) -> None:
    line, col, msg = one(tmp_path, BASE.replace("a: h1,", "a: h1:2,"))
    assert (line, col) == (7, 9) and "host port must be 0" in msg


def test_interface_name_too_long(tmp_path: Path) -> None:
    text = BASE.replace("s1", "leaf_number_one")
    line, col, msg = one(tmp_path, text)
    assert (line, col) == (7, 16)
    assert "'leaf_number_one-eth1' is 20 characters" in msg and "15" in msg


def test_bad_node_name(tmp_path: Path) -> None:
    line, col, msg = one(
        tmp_path, BASE.replace("{name: h1}", "{name: h-1}").replace("a: h1", "a: h-1")
    )
    assert (line, col) == (5, 12) and "bad node name" in msg


def test_wrong_types(tmp_path: Path) -> None:
    errs = errors(tmp_path, "switches: {s1: leaf}\nlinks: 3\n")
    assert [(e[0], e[1]) for e in errs][:2] == [(1, 11), (2, 8)]
    assert "must be a list" in errs[0][2]


def test_not_a_mapping(tmp_path: Path) -> None:
    line, col, msg = one(tmp_path, "- just\n- a list\n")
    assert (line, col) == (1, 1) and "must be a mapping" in msg


def test_empty_file(tmp_path: Path) -> None:
    line, col, msg = one(tmp_path, "")
    assert (line, col) == (1, 1) and "must be a mapping, got nothing" in msg


def test_a_file_of_one_scalar_is_quoted_short(tmp_path: Path) -> None:
    # Any text file (say /etc/passwd) parses as one YAML scalar: the message named it whole.
    text = "\n".join(f"user{i}:x:{i}:{i}::/home/user{i}:/bin/sh" for i in range(200)) + "\n"
    line, col, msg = one(tmp_path, text)
    assert (line, col) == (1, 1) and "must be a mapping, got str 'user0:x:0:0" in msg
    assert len(msg) < 200 and "user199" not in msg


def test_yaml_syntax_error(tmp_path: Path) -> None:
    line, col, msg = one(tmp_path, "name: t\nswitches: [\n  {name: s1\n")
    assert msg.startswith("YAML syntax error")
    assert line >= 3 and col >= 1


def test_several_errors_reported_together(tmp_path: Path) -> None:
    text = BASE.replace("name: t", "nmae: t").replace("b: s1:1", "b: s1:1, delay: 5 lightyears")
    errs = errors(tmp_path, text)
    assert [(e[0], e[1]) for e in errs] == [(1, 1), (7, 29)]


def test_resolution_errors_come_with_format_errors(tmp_path: Path) -> None:
    # A dangling link used to be reported only once the format errors were fixed.
    text = BASE.replace("name: t", "nmae: t") + "  - {a: s1, b: s9}\n"
    errs = errors(tmp_path, text)
    assert [(e[0], e[1]) for e in errs] == [(1, 1), (8, 16)]
    assert "link endpoint 's9' is not a declared switch or host" in errs[1][2]


def test_entry_with_errors_causes_no_second_error(tmp_path: Path) -> None:
    # s2's role is wrong: links to it are not dangling, h2 (on a broken link) is not
    # unattached, and the fabric is not called disconnected.
    text = BASE.replace(
        "  - {name: s1, role: leaf}\n", "  - {name: s1, role: leaf}\n  - {name: s2, role: lef}\n"
    ).replace("  - {name: h1}\n", "  - {name: h1}\n  - {name: h2}\n")
    text += "  - {a: s1, b: s2}\n  - {a: h2, b: s2:x}\n"
    errs = errors(tmp_path, text)
    assert [(e[0], e[1]) for e in errs] == [(4, 22), (11, 16)]
    assert "role" in errs[0][2] and "port in 's2:x'" in errs[1][2]


def test_duplicate_key_comes_with_other_errors(tmp_path: Path) -> None:
    text = BASE.replace("name: t", "name: t\nname: u").replace("b: s1:1", "b: s1:1, rate: 1Mbsp")
    errs = errors(tmp_path, text)
    assert [(e[0], e[1]) for e in errs] == [(2, 1), (8, 28)]
    assert "duplicate key 'name'" in errs[0][2] and "bad rate '1Mbsp'" in errs[1][2]


def test_yaml_syntax_error_at_pyyaml_problem_with_its_context(tmp_path: Path) -> None:
    text = BASE.replace("  - {name: s1, role: leaf}", "  - {name: s1, role: leaf")
    line, col, msg = one(tmp_path, text)
    # PyYAML's caret is on the line after the unclosed '{'; the message names both.
    assert (line, col) == (4, 6)
    assert msg == (
        "YAML syntax error: expected ',' or '}', but got ':' "
        "(while parsing a flow mapping at line 3, column 5)"
    )


def test_aliases_that_expand_to_billions_of_values_are_refused(tmp_path: Path) -> None:
    """Nine aliases of nine aliases ("billion laughs") were expanded node by node: the
    loader took all memory and the kernel killed it. Aliases are shared now, and what a
    document expands to is bounded."""
    laughs = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi", strict=True))
    line, col, msg = one(tmp_path, BASE + laughs)
    assert "expands to more than 1,000,000 values" in msg and line > BASE.count("\n")


def test_a_recursive_alias_is_refused(tmp_path: Path) -> None:
    line, col, msg = one(tmp_path, BASE + "x: &r [1, *r]\n")
    assert line == 8 and "recursive structure" in msg


@pytest.mark.parametrize("recursion_limit", [1000, 20000])
def test_yaml_nested_hundreds_deep_is_a_located_error(tmp_path: Path, recursion_limit: int) -> None:
    """PyYAML composes nested collections recursively: 5,000 levels ended in a
    RecursionError, or were read whole where something (the P4 front end, for deep
    programs) had raised the recursion limit. The depth is bounded either way."""
    import sys

    before = sys.getrecursionlimit()
    sys.setrecursionlimit(recursion_limit)
    try:
        line, col, msg = one(tmp_path, BASE + "x: " + "[" * 5000 + "]" * 5000 + "\n")
    finally:
        sys.setrecursionlimit(before)
    assert "nested too deeply" in msg and (line, col) == (8, 103)  # the 100th "["


def test_aliases_and_merge_keys_still_work(tmp_path: Path) -> None:
    f = tmp_path / "ok.yaml"
    f.write_text("name: t\ndefaults: {rate: 10Gbps, delay: 1us}\n"
                 "switches:\n  - &leaf {name: s1, role: leaf}\n  - {<<: *leaf, name: s2}\n"
                 "hosts: [{name: h1}, {name: h2}]\n"
                 "links: [{a: h1, b: s1}, {a: h2, b: s2}, &l {a: s1, b: s2}]\n")
    assert load_topology(f).summary() == "2 switches, 2 hosts, 3 links"


def test_a_queue_deeper_than_bmv2_takes_is_refused(tmp_path: Path) -> None:
    line, col, msg = one(tmp_path, BASE + "defaults:\n  queue_depth_pkts: 99999999999999999999\n")
    assert (line, col) == (9, 21) and "must be <= 2,147,483,647" in msg
