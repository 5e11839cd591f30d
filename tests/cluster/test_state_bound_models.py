"""The state cache keeps each node's bound pod models from one solve to the next until a
pod of that node joins, changes, finishes or goes: whatever the pods do, the kept list is
the one read afresh from the pods bound there now (the very same models)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from nodewright.state.pods import PodStore

NODES = ["a", "b"]
STEPS = st.lists(
    st.tuples(st.sampled_from(["bind", "status", "finish", "delete", "relabel"]),
              st.integers(0, 5), st.sampled_from(NODES)),
    min_size=1, max_size=30,
)


def pod(name: str, node: str | None = None, *, phase: str = "Pending",
        labels: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "app",
                                            "resources": {"requests": {"cpu": "1"}}}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": name,
                         "labels": labels or {"app": "web"}},
            "spec": spec, "status": {"phase": phase}}


def fresh(store: PodStore, node: str) -> list[Any]:
    pods = store.by_node.get(node)
    return [store.model(key) for key in (pods.requests if pods is not None else ())]


@settings(max_examples=60, deadline=None)
@given(STEPS)
def test_kept_models_are_the_models_of_the_pods_bound_now(
        steps: list[tuple[str, int, str]]) -> None:
    store = PodStore()
    for i in range(6):
        store.update(pod(f"p{i}"))
    for what, i, node in steps:
        name = f"p{i}"
        current = store.objects.get(f"default/{name}")
        bound_to = (current or {}).get("spec", {}).get("nodeName")
        if what == "bind":
            store.update(pod(name, node, phase="Running"))
        elif what == "status" and current is not None:
            store.update({**current, "status": {"phase": "Running", "podIP": f"10.0.0.{i}"}})
        elif what == "finish" and current is not None:
            store.update(pod(name, bound_to, phase="Succeeded"))
        elif what == "delete" and current is not None:
            store.delete(current)
        elif what == "relabel" and current is not None:
            store.update(pod(name, bound_to, phase="Running", labels={"app": node}))
        for each in NODES:
            kept = store.bound_models(each)
            assert kept == fresh(store, each)
            assert all(a is b for a, b in zip(kept, fresh(store, each), strict=True))
            assert [model.labels for model in kept] == [
                dict(store.objects[key]["metadata"]["labels"])
                for key in (store.by_node[each].requests if each in store.by_node else ())]


def test_a_copy_keeps_its_own_lists() -> None:
    store = PodStore()
    store.update(pod("p0", "a", phase="Running"))
    before = store.bound_models("a")
    copied = store.copy()
    store.update(pod("p1", "a", phase="Running"))

    assert [model.name for model in copied.bound_models("a")] == ["p0"]
    assert copied.bound_models("a") is before
    assert [model.name for model in store.bound_models("a")] == ["p0", "p1"]
