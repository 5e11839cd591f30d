"""A what-if in which proposed NodePools take over node groups: each Node of the group
named by a NodePool's `nodewright.io/takes-over` annotation becomes a NodeClaim of that
NodePool running where it runs (same node name, so its bound pods stay on it), which the
controllers may then consolidate like any other."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence

from nodewright.api.manifests import Document
from nodewright.scheduling import labels as well_known
from nodewright.scheduling.catalog import offline_catalog
from nodewright.sim.scenario import FleetClaim, Scenario
from nodewright.sim.snapshot.nodegroups import TAKES_OVER, group_of


def take_over(scenario: Scenario, replacements: Sequence[Document]
              ) -> tuple[Scenario, list[str]]:
    takers = {str((d.body.get("metadata") or {}).get("annotations", {}).get(TAKES_OVER)): d.name
              for d in replacements if d.kind == "NodePool"
              and TAKES_OVER in ((d.body.get("metadata") or {}).get("annotations") or {})}
    if not takers:
        return scenario, []
    catalog = {it.name for it in offline_catalog(scenario.region, scenario.zones)}
    kept: list[Document] = []
    claims: list[FleetClaim] = []
    notes: list[str] = []
    for document in scenario.manifests:
        pool = takers.get(group_of(document.body)) if document.kind == "Node" else None
        if pool is None:
            kept.append(document)
            continue
        labels = (document.body.get("metadata") or {}).get("labels") or {}
        instance_type = labels.get(well_known.INSTANCE_TYPE, "")
        zone = labels.get(well_known.ZONE, "")
        if instance_type not in catalog or zone not in scenario.zones:
            notes.append(f"Node {document.name} ({instance_type or 'no instance type'}, "
                         f"{zone or 'no zone'}) stays unmanaged: not in the catalog")
            kept.append(document)
            continue
        spot = (labels.get("eks.amazonaws.com/capacityType", "").lower() == "spot"
                or labels.get(well_known.CAPACITY_TYPE) == "spot")
        suffix = hashlib.sha256(document.name.encode()).hexdigest()[:5]
        claims.append(FleetClaim(
            name=f"{pool}-{suffix}", node_pool=pool, instance_type=instance_type, zone=zone,
            capacity_type="spot" if spot else "on-demand", node_name=document.name))
    if claims:
        notes.append(f"{len(claims)} node-group nodes taken over by NodePools "
                     f"{', '.join(sorted(set(takers.values())))}")
    return dataclasses.replace(scenario, manifests=tuple(kept),
                               node_claims=(*scenario.node_claims, *claims)), notes
