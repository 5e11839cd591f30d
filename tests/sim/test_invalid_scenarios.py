"""A user's scenario with a mistake: `nodewright simulate` names the file, the line and the
field, exits 2 and runs nothing. Never a traceback."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from nodewright.cli import main
from tests.sim.conftest import ScenarioWriter

VALID_HEAD = """
name: broken
manifests:
  - WORKSHOP
"""


def with_head(text: str) -> str:
    """A scenario that starts with a valid name and manifests, then `text`."""
    return VALID_HEAD + textwrap.dedent(text).lstrip("\n")


# (what is wrong, scenario text, line of the problem, text the message must contain)
MISTAKES = [
    ("an unknown top-level key", """
        name: broken
        regoin: us-east-1
        manifests: [WORKSHOP]
        steps: []
        """, 2, "regoin: unknown key 'regoin' in the scenario (did you mean 'region'?"),
    ("a duration in words", with_head("""
        steps:
          - wait: 5 minutes
        """), 5, "steps[0].wait: wait: '5 minutes' is not a duration such as"),
    ("a duration without a unit", with_head("""
        steps:
          - wait: 30
        """), 5, "steps[0].wait: wait needs a unit: write 30s or 30m"),
    ("a manifest that is not there", """
        name: broken
        manifests:
          - WORKSHOP
          - ./missing.yaml
        steps: []
        """, 4, "manifests[1]: no such file or directory:"),
    ("a step with two keys", with_head("""
        steps:
          - wait: 1m
            expect: {nodes: 0}
        """), 6, "a step has exactly one key, this one has 'wait' and 'expect'"),
    ("an expect on a NodePool that does not exist", with_head("""
        steps:
          - expect:
              nodePools: {gpu: 1}
        """), 6, "steps[0].expect.nodePools.gpu: no NodePool 'gpu' exists at this step "
                "(NodePools: default)"),
    ("an impossible start date", with_head("""
        start: 2026-13-05T00:00:00Z
        steps: []
        """), 4, "start: start '2026-13-05T00:00:00Z' is not a valid time"),
    ("a start that is not in UTC", with_head("""
        start: 2026-01-05T09:00:00+02:00
        steps: []
        """), 4, "start must be in UTC"),
    ("a start without a time", with_head("""
        start: 2026-01-05
        steps: []
        """), 4, "start must be an RFC 3339 time in UTC such as 2026-01-05T00:00:00Z"),
    ("negative replicas", with_head("""
        steps:
          - scale: {name: inflate, replicas: -3}
        """), 5, "steps[0].scale.replicas: replicas must not be negative, got -3"),
    ("an unknown interruption kind", with_head("""
        steps:
          - interrupt: {select: {nodePool: default}, kind: preempt}
        """), 5, "interruption kind 'preempt' is not one of: spot, scheduled, stop, terminate, "
                "rebalance"),
    ("a selector key in the wrong case", with_head("""
        steps:
          - interrupt:
              select: {nodepool: default}
              kind: spot
        """), 6, "steps[0].interrupt.select.nodepool: unknown key 'nodepool' in select (did you "
                "mean 'nodePool'?"),
    ("capacity for an unknown instance type", with_head("""
        capacity:
          - {instanceType: m9.huge, available: 2}
        steps: []
        """), 5, "capacity[0].instanceType: instance type 'm9.huge' is not in the region's "
                "catalog"),
    ("a capacity block without an end", with_head("""
        capacityReservations:
          - {id: cr-0123, instanceType: m5.large, zone: us-east-1a, count: 2,
             type: capacity-block}
        steps: []
        """), 5, "capacityReservations[0].endsAfter: a capacity block needs endsAfter"),
    ("a reservation id EC2 would not give", with_head("""
        capacityReservations:
          - {id: reservation-1, instanceType: m5.large, zone: us-east-1a, count: 2}
        steps: []
        """), 5, "capacityReservations[0].id: id 'reservation-1' must look like cr-0123abcd"),
    ("a reservation without its instance type", with_head("""
        capacityReservations:
          - {id: cr-0123, zone: us-east-1a, count: 2}
        steps: []
        """), 5, "capacityReservations[0]: a capacity reservation needs 'instanceType'"),
    ("a reservation in a zone the scenario lacks", with_head("""
        capacityReservations:
          - {id: cr-0123, instanceType: m5.large, zone: us-west-2a, count: 2}
        steps: []
        """), 5, "capacityReservations[0].zone: zone 'us-west-2a' is not one of"),
    ("no name", """
        manifests: [WORKSHOP]
        steps: []
        """, 1, "the scenario needs 'name'"),
    ("a misspelt step", with_head("""
        steps:
          - settel: {timeout: 5m}
        """), 5, "steps[0].settel: unknown key 'settel' in a step (did you mean 'settle'?"),
    ("scaling a Deployment that does not exist", with_head("""
        steps:
          - scale: {name: web, replicas: 3}
        """), 5, "steps[0].scale.name: no Deployment/default/web at this step (known: "
                "Deployment/default/inflate)"),
    ("an invalid inline NodePool", """
        name: broken
        manifests:
          - WORKSHOP
          - apiVersion: karpenter.sh/v1
            kind: NodePool
            metadata: {name: big}
            spec:
              template:
                spec:
                  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
                  requirements: []
              limits: {cpu: lots}
        steps: []
        """, 12, "NodePool/big: spec.limits.cpu: 'lots' is not a Kubernetes quantity"),
    ("a misspelt expect key", with_head("""
        steps:
          - expect: {node: 1}
        """), 5, "steps[0].expect.node: unknown key 'node' in expect (did you mean 'nodes'?"),
    ("a tab in the indentation", "name: broken\nmanifests:\n\t- WORKSHOP\nsteps: []\n", 3,
     "YAML syntax error"),
    ("an unknown feature gate", with_head("""
        settings:
          featureGates: {SpotToSpot: true}
        steps: []
        """), 5, "unknown key 'SpotToSpot' in featureGates (did you mean "
                "'SpotToSpotConsolidation'?"),
    ("a zone of another region", with_head("""
        zones: [eu-west-1a]
        steps: []
        """), 4, "zones[0]: zone 'eu-west-1a' is not a zone of us-east-1"),
    ("an hourly cost range upside down", with_head("""
        steps:
          - expect: {hourlyCost: {min: 2, max: 1}}
        """), 5, "steps[0].expect.hourlyCost: min (2.0) is more than max (1.0)"),
    ("an unknown disruption reason", with_head("""
        steps:
          - expect: {disruptions: {Consolidated: 1}}
        """), 5, "'Consolidated' is not a disruption reason"),
    ("deleting a NodePool that was never defined", with_head("""
        steps:
          - delete: {kind: NodePool, name: spot}
        """), 5, "steps[0].delete.name: no NodePool/spot at this step (known: NodePool/default)"),
    ("selecting by name and by pool at once", with_head("""
        steps:
          - interrupt: {select: {name: n1, nodePool: default}, kind: stop}
        """), 5, "select a node either by name or by nodePool"),
    ("an unknown region", with_head("""
        region: mars-north-1
        steps: []
        """), 4, "region 'mars-north-1' is not in the catalog"),
    ("a NodePool without its EC2NodeClass", """
        name: broken
        manifests:
          - apiVersion: karpenter.sh/v1
            kind: NodePool
            metadata: {name: lonely}
            spec:
              template:
                spec:
                  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: nowhere}
                  requirements: []
        steps: []
        """, 9, "EC2NodeClass 'nowhere' is not in the scenario"),
    ("steps that are not a list", with_head("""
        steps:
          wait: 1m
        """), 4, "steps: steps must be a list, got a mapping"),
    ("a bad pod spec in a Deployment", """
        name: broken
        manifests:
          - WORKSHOP
          - apiVersion: apps/v1
            kind: Deployment
            metadata: {name: web}
            spec:
              replicas: 2
              template:
                metadata: {labels: {app: web}}
                spec:
                  containers:
                    - name: web
                      resources: {requests: {cpu: fast}}
        steps: []
        """, 14, "Deployment/web: spec.template.spec.containers[0].resources.requests: cpu: "
                 "'fast' is not a quantity"),
    ("no manifests", """
        name: broken
        steps: []
        """, 1, "the scenario needs 'manifests'"),
    ("no steps", """
        name: broken
        manifests: [WORKSHOP]
        """, 1, "the scenario needs 'steps'"),
    ("a key given twice", """
        name: broken
        manifests: [WORKSHOP]
        name: again
        steps: []
        """, 3, "name: duplicate key 'name' (first at line 1)"),
    ("two documents in the scenario file", with_head("""
        steps: []
        ---
        name: other
        """), 6, "a scenario file holds one YAML mapping; it has 2 documents"),
    ("an empty step", with_head("""
        steps:
          - {}
        """), 5, "steps[0]: an empty step; give one of: scale, apply, delete, wait, settle"),
    ("a settle timeout of zero", with_head("""
        steps:
          - settle: {timeout: 0s}
        """), 5, "steps[0].settle.timeout: timeout must be longer than 0s"),
    ("a negative settle timeout", with_head("""
        steps:
          - settle: {timeout: -5m}
        """), 5, "steps[0].settle.timeout: timeout: '-5m' is negative"),
    ("interrupting no node at all", with_head("""
        steps:
          - interrupt: {kind: stop, count: 0}
        """), 5, "steps[0].interrupt.count: count must not be less than 1, got 0"),
    ("podsEvicted without its max", with_head("""
        steps:
          - expect: {podsEvicted: {}}
        """), 5, "steps[0].expect.podsEvicted: podsEvicted needs 'max'"),
    ("zones counted both ways", with_head("""
        steps:
          - expect: {zones: {distinct: 2, us-east-1a: 1}}
        """), 5, "zones is either {distinct: N} or a map of zone to count, not both"),
    ("a count that is not a number", with_head("""
        steps:
          - expect: {instanceTypes: {m5.large: two}}
        """), 5, "the count for 'm5.large' must be a whole number, got the string 'two'"),
    ("a fractional node count", with_head("""
        steps:
          - expect: {nodes: 1.5}
        """), 5, "steps[0].expect.nodes: nodes must be a whole number, got the number 1.5"),
    ("a capacity type EC2 does not sell", with_head("""
        capacity:
          - {instanceType: m5.large, capacityType: reserved, available: 1}
        steps: []
        """), 5, "capacity[0].capacityType: capacityType 'reserved' is not one of: on-demand, "
                "spot"),
    ("a negative price", with_head("""
        prices:
          - {instanceType: m5.large, capacityType: spot, price: -1}
        steps: []
        """), 5, "prices[0].price: price must not be negative, got -1"),
    ("a feature gate that is not a boolean", with_head("""
        settings:
          featureGates: {NodeRepair: yes please}
        steps: []
        """), 5, "feature gate 'NodeRepair' is true or false, got the string 'yes please'"),
    ("a misspelt setting", with_head("""
        settings:
          launchdelay: 1m
        steps: []
        """), 5, "settings.launchdelay: unknown key 'launchdelay' in settings (did you mean "
                "'launchDelay'?"),
    ("a seed that is not a number", with_head("""
        seed: lucky
        steps: []
        """), 4, "seed: seed must be a whole number, got the string 'lucky'"),
    ("scaling a kind that has no replicas", with_head("""
        steps:
          - scale: {kind: DaemonSet, name: x, replicas: 1}
        """), 5, "kind 'DaemonSet' is not one of: Deployment, ReplicaSet, StatefulSet"),
    ("a namespace for a cluster-scoped kind", with_head("""
        steps:
          - delete: {kind: NodePool, name: default, namespace: default}
        """), 5, "steps[0].delete.namespace: NodePool is cluster-scoped: leave out namespace"),
    ("applying a file that is not there", with_head("""
        steps:
          - apply: missing.yaml
        """), 5, "steps[0].apply: no such file or directory:"),
    ("an inline object without a kind", """
        name: broken
        manifests:
          - WORKSHOP
          - {apiVersion: v1, metadata: {name: x}}
        steps: []
        """, 4, "manifests[1]: an inline object in manifests needs apiVersion and kind"),
    ("a bad field deep in the second inline object", """
        name: broken
        manifests:
          - {apiVersion: v1, kind: Namespace, metadata: {name: a}}
          - apiVersion: karpenter.sh/v1
            kind: NodePool
            metadata:
              name: broken
            spec:
              disruption:
                consolidateAfter: soon
              template:
                spec:
                  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
                  requirements: []
        steps: []
        """, 10, "NodePool/broken: spec.disruption.consolidateAfter: 'soon' is not a duration"),
    ("scaling what an earlier step deleted", with_head("""
        steps:
          - delete: {kind: Deployment, name: inflate}
          - scale: {name: inflate, replicas: 1}
        """), 6, "steps[1].scale.name: no Deployment/default/inflate at this step"),
    ("a PodTemplate whose template metadata is not a mapping", """
        name: broken
        manifests:
          - apiVersion: v1
            kind: PodTemplate
            metadata: {name: chunk, namespace: default}
            template:
              metadata: 12
              spec:
                containers: [{name: c, image: pause}]
        steps: []
        """, 7, "PodTemplate/chunk: template.metadata: must be a mapping, got the number 12"),
    ("an hourly cost bound in words", with_head("""
        steps:
          - expect: {hourlyCost: {max: cheap}}
        """), 5, "steps[0].expect.hourlyCost.max: max must be a number, got the string 'cheap'"),
]


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [pytest.param(text, line, message, id=what) for what, text, line, message in MISTAKES],
)
def test_a_mistake_is_reported_at_its_line_and_nothing_runs(
    write_scenario: ScenarioWriter,
    capsys: pytest.CaptureFixture[str],
    text: str,
    line: int,
    message: str,
) -> None:
    path = write_scenario(text)

    code = main(["simulate", str(path)])

    captured = capsys.readouterr()
    assert code == 2, captured.out
    located = [entry for entry in captured.out.splitlines()
               if entry.startswith(f"{path}:{line}:")]
    assert any(message in entry for entry in located), captured.out
    assert "nothing was run" in captured.err
    assert "Traceback" not in captured.out + captured.err
    assert "[00:00:00]" not in captured.out


def test_a_mistake_in_a_step_names_the_step_as_the_timeline_counts_it(
    write_scenario: ScenarioWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_scenario(with_head("""
        steps:
          - scale: {name: inflate, replicas: 2}
          - scale: {name: inflate, replicas: -3}
        """))

    assert main(["simulate", str(path)]) == 2

    assert (f"{path}:6: steps[1].scale.replicas: replicas must not be negative, got -3 "
            "(step 2)") in capsys.readouterr().out.splitlines()


def test_every_mistake_of_a_file_is_reported_in_one_run(
    write_scenario: ScenarioWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_scenario(with_head("""
        seed: -1
        steps:
          - scale: {name: inflate, replicas: many}
          - wait: soon
          - expect: {nodes: -2}
        """))

    code = main(["simulate", str(path)])

    lines = capsys.readouterr().out.splitlines()
    assert code == 2
    assert [entry.split(":")[1] for entry in lines] == ["4", "6", "7", "8"]


def test_a_missing_scenario_file_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["simulate", str(tmp_path / "nope.yaml")])

    assert code == 2
    assert capsys.readouterr().out.strip() == f"{tmp_path / 'nope.yaml'}:0: no such scenario file"


def test_a_kind_the_simulator_ignores_is_a_warning_and_the_run_goes_on(
    write_scenario: ScenarioWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_scenario(with_head("""
          - {apiVersion: v1, kind: ConfigMap, metadata: {name: settings}}
        steps:
          - apply: {apiVersion: v1, kind: Secret, metadata: {name: token}}
          - expect: {nodes: 0}
        """))

    code = main(["simulate", str(path), "--quiet"])

    output = capsys.readouterr().out
    assert code == 0, output
    assert (f"{path}:4: ConfigMap/settings: kind: warning: kind 'ConfigMap' is not simulated "
            "and is ignored") in output
    assert f"{path}:6: Secret/token: kind: warning: kind 'Secret' is not simulated" in output


def test_the_documented_example_scenario_is_valid(tmp_path: Path) -> None:
    from nodewright.sim.loading import load_scenario
    from tests.sim.conftest import REPO, WORKSHOP_MANIFESTS

    document = (REPO / "docs" / "scenarios.md").read_text(encoding="utf-8")
    example = document.split("```yaml\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "example.yaml"
    path.write_text(example.replace("../examples/workshop", str(WORKSHOP_MANIFESTS)))

    scenario, problems = load_scenario(path)

    assert problems == [] and scenario is not None
    assert [type(step).__name__ for step in scenario.steps] == [
        "ScaleStep", "SettleStep", "ExpectStep"]
