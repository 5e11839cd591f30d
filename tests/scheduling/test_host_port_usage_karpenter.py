"""Karpenter pkg/scheduling/hostportusage_test.go: when two host ports are the same port on
a node (`HostPort.conflicts`): same port and protocol, and the same address or either one
listening on every address (0.0.0.0 or ::). Pods whose host ports conflict go to different
nodes (tests/scheduling/test_host_ports.py)."""

from __future__ import annotations

from dataclasses import replace

from nodewright.scheduling.pods import HostPort

WEB = HostPort(4443, "TCP", "10.0.0.0")


def conflict_both_ways(a: HostPort, b: HostPort) -> tuple[bool, bool]:
    return a.conflicts(b), b.conflicts(a)


def test_identical_host_ports_are_the_same_port() -> None:
    """Karpenter pkg/scheduling/hostportusage_test.go It("identical entries match")."""
    assert conflict_both_ways(WEB, replace(WEB)) == (True, True)


def test_a_port_on_every_address_is_the_same_port_as_one_on_any_address() -> None:
    """Karpenter pkg/scheduling/hostportusage_test.go It("if any one IP has an unspecified
    IPv4 or IPv6 address, they match")."""
    assert conflict_both_ways(WEB, replace(WEB, host_ip="0.0.0.0")) == (True, True)
    assert conflict_both_ways(WEB, replace(WEB, host_ip="::")) == (True, True)
    # A port that names no address (Kubernetes' default) listens on every one.
    assert conflict_both_ways(WEB, replace(WEB, host_ip="")) == (True, True)
    assert conflict_both_ways(WEB, replace(WEB, host_ip="10.0.0.1")) == (False, False)


def test_the_same_port_over_another_protocol_is_another_port() -> None:
    """Karpenter pkg/scheduling/hostportusage_test.go It("mismatched protocols don't
    match")."""
    assert conflict_both_ways(WEB, replace(WEB, protocol="SCTP")) == (False, False)


def test_another_port_number_is_another_port() -> None:
    """Karpenter pkg/scheduling/hostportusage_test.go It("mismatched ports don't match")."""
    assert conflict_both_ways(WEB, replace(WEB, port=443)) == (False, False)
