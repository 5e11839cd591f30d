"""The overlay store answers each pass's question for the same catalog objects once: the
provisioner and the disruption controller ask for a pool's overlaid instance types on
every pass, and applying the overlays to hundreds of types each time was most of a pass
(a generated scenario took 298 s instead of 45 s)."""

from __future__ import annotations

import dataclasses

from nodewright.api.nodeoverlay import NodeOverlay
from nodewright.api.nodepool import NodePool
from nodewright.scheduling.overlays import build_store
from tests.overlay.karpenter_fixture import (
    INSTANCE_TYPE,
    instance_type,
    nodepool,
    offering,
    overlay,
)

CHEAPER = overlay("cheaper", (INSTANCE_TYPE, "In", ["m5.large"]), priceAdjustment="-50%")


def test_the_same_catalog_objects_get_the_same_answer_and_new_ones_a_new_one() -> None:
    m5 = instance_type("m5.large", offering("on-demand", "us-west-2a", 0.096))
    c5 = instance_type("c5.large", offering("on-demand", "us-west-2a", 0.085))
    catalog = [m5, c5]
    store, _ = build_store([NodeOverlay.model_validate(CHEAPER)],
                           {"default": (NodePool.model_validate(nodepool("default")), catalog)})

    first = store.apply("default", list(catalog))
    again = store.apply("default", list(catalog))
    one = store.apply("default", [m5])  # a launch asks for its type alone
    refreshed = store.apply("default", [dataclasses.replace(m5), c5])

    assert first is not None and again is not None and one is not None
    assert refreshed is not None
    assert [it.offerings[0].price for it in first] == [0.048, 0.085]
    assert again == first and all(a is b for a, b in zip(again, first, strict=True))
    assert again is not first  # each caller gets a list of its own
    assert one[0].offerings[0].price == 0.048
    assert refreshed[0] is not first[0] and refreshed[0].offerings[0].price == 0.048
    assert refreshed[1] is c5  # untouched types are the catalog's own
