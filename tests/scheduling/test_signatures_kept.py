"""Pod signatures kept from one disruption pass to the next (`Signatures(earlier)`, given
by `PreparedNodes(earlier=...)`): a signature is a function of the pod object alone, so a
pod model the state kept is not read again, a new model is, and only two passes' pods
are held."""

from __future__ import annotations

from dataclasses import replace

import pytest

from nodewright.scheduling.pods import ExistingNode
from nodewright.scheduling.solver import PreparedNodes, SchedulingProblem
from nodewright.scheduling.solver import context as solver_context
from nodewright.scheduling.solver.context import Signatures, signature
from nodewright.scheduling.targets import ResourceIndex
from tests.scheduling.test_solver import GIB, HOSTNAME, nodepool, pod


@pytest.fixture
def worked_out(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    names: list[str] = []
    original = solver_context.signature

    def counted(p: object) -> tuple[object, ...]:
        names.append(p.name)  # type: ignore[attr-defined]
        return original(p)  # type: ignore[arg-type]

    monkeypatch.setattr(solver_context, "signature", counted)
    return names


def test_the_next_pass_reads_a_kept_pod_once_and_a_changed_one_again(
        worked_out: list[str]) -> None:
    kept, changed = pod("web-1"), pod("web-2")
    first = Signatures()
    first.of(kept), first.of(changed)
    assert worked_out == ["web-1", "web-2"]

    # The next pass: web-1's model is the same object; web-2's was made again with other
    # labels (an update replaced it).
    relabelled = replace(changed, labels={"app": "api"})
    second = Signatures(first)
    assert second.of(kept) == signature(kept)
    assert second.of(relabelled) == signature(relabelled) != signature(changed)
    assert worked_out == ["web-1", "web-2", "web-2"]

    # A third pass holds what the second used, not what only the first did.
    third = Signatures(second)
    third.of(changed)
    assert worked_out == ["web-1", "web-2", "web-2", "web-2"]


def test_prepared_nodes_pass_their_signatures_to_the_next_pass(worked_out: list[str]) -> None:
    node = ExistingNode("node-0", {HOSTNAME: "node-0"}, (),
                        {"cpu": 4000, "memory": 16 * GIB, "pods": 110_000})
    moving = pod("web-1")
    problem = SchedulingProblem(pods=[moving], nodepools=[nodepool()], nodes=[node])
    first = PreparedNodes(problem)
    first.signatures.of(moving)
    second = PreparedNodes(problem, earlier=first)
    second.signatures.of(moving)
    assert worked_out == ["web-1"]


def test_vectors_of_different_slots_are_not_added() -> None:
    index = ResourceIndex(["cpu", "memory"])
    assert index.add((1, 2), (3, 4)) == (4, 6)
    with pytest.raises(ValueError, match="vectors of 2 and 3 slots"):
        index.add((1, 2), (3, 4, 5))
