"""A cheap necessary condition checked before simulating a consolidation.

A pod that fits in the free room of no other machine (by its cpu, memory and pod-count
requests alone, ignoring taints, labels and topology, so the test can only be too
lenient) can only go to the one new node a consolidation may launch. Likewise whatever
part of the pods' total requests exceeds the other machines' free room added up (each
resource on its own) can only go there. So if the larger of the two, together with the
DaemonSets a new node runs, fits in no instance type cheaper than the candidates, no
simulation could find a consolidation and none is run. On a full cluster, or one whose
holes add up to less than a node's pods, this spares consolidation a solve per node.
When every moving pod has the same requests (one Deployment), a machine takes only whole
pods, which tightens the second bound.

A pod fits some machine exactly when it fits one of the machines whose free room no
other machine's dominates (the Pareto front of free room), which stays small however
many machines there are.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from nodewright.api.quantity import CPU, MEMORY, PODS, format_quantity
from nodewright.controllers.disruption.candidates import Candidate
from nodewright.controllers.provisioning.problem import PoolContext
from nodewright.scheduling.nodepools import cheapest_price, compatible_mask
from nodewright.scheduling.pods import Pod
from nodewright.state.statenode import StateNode

RESOURCES = (CPU, MEMORY, PODS)
Room = tuple[int, int, int]


def _room(resources: Mapping[str, int]) -> Room:
    return (resources.get(CPU, 0), resources.get(MEMORY, 0), resources.get(PODS, 0))


def _dominates(a: Room, b: Room) -> bool:
    return a[0] >= b[0] and a[1] >= b[1] and a[2] >= b[2]


def pareto_front(rooms: Iterable[tuple[str, Room]]) -> list[tuple[str, Room]]:
    """The machines whose free room no other machine's covers in every resource."""
    front: list[tuple[str, Room]] = []
    for name, room in sorted(rooms, key=lambda item: (-item[1][0], -item[1][1], -item[1][2])):
        if any(_dominates(kept, room) for _, kept in front):
            continue
        front.append((name, room))
    return front


def _fits(need: Room, room: Room) -> bool:
    return need[0] <= room[0] and need[1] <= room[1] and need[2] <= room[2]


def _sum(rooms: Iterable[Room]) -> Room:
    total = [0, 0, 0]
    for room in rooms:
        for i in range(3):
            total[i] += room[i]
    return (total[0], total[1], total[2])


def _spare(room: Room) -> Room:
    """An overcommitted machine has no room, not negative room."""
    return (max(0, room[0]), max(0, room[1]), max(0, room[2]))


@dataclass
class FreeRoom:
    """The free room of every machine a pod could move to.

    A pass asks about every candidate in turn, each time "without these machines": the
    answers are worked out from the whole fleet's once (how many machines have each free
    room, how many pods of a shape the fleet takes) less the candidates', not from the
    fleet again, which made a pass grow with the square of the fleet."""

    rooms: dict[str, Room]
    front: list[tuple[str, Room]]
    total: Room = (0, 0, 0)  # every machine's spare room added up

    def __post_init__(self) -> None:
        self._machines_with: Counter[Room] = Counter(self.rooms.values())
        self._copies: dict[Room, int | None] = {}

    @classmethod
    def of(cls, machines: Iterable[StateNode]) -> FreeRoom:
        rooms = {
            node.name: _room(node.available())
            for node in machines
            if node.initialized and not (node.node or {}).get("spec", {}).get("unschedulable")
        }
        return cls(rooms, pareto_front(rooms.items()), _sum(map(_spare, rooms.values())))

    def total_without(self, names: set[str]) -> Room:
        gone = _sum(_spare(self.rooms[name]) for name in names if name in self.rooms)
        return (self.total[0] - gone[0], self.total[1] - gone[1], self.total[2] - gone[2])

    def front_without(self, names: set[str]) -> list[tuple[str, Room]]:
        """The front of the other machines' free room. Only the rooms matter to the
        callers: a front machine that goes leaves the front as it was while another
        machine has the very same room."""
        if not any(name in names for name, _ in self.front):
            return self.front
        going = Counter(self.rooms[name] for name in names if name in self.rooms)
        if all(self._machines_with[room] > going[room] for _, room in self.front):
            return self.front
        return pareto_front((n, r) for n, r in self.rooms.items() if n not in names)

    def copies_without(self, shape: Room, names: set[str]) -> int | None:
        """How many pods of `shape` the machines other than `names` take whole, added up
        (None: any number, a shape that needs nothing)."""
        if not any(need > 0 for need in shape):
            return None
        if shape not in self._copies:
            self._copies[shape] = _copies_in(shape, self.rooms.values())
        everywhere = self._copies[shape]
        if everywhere is None:
            return None
        return everywhere - (_copies_in(shape, (self.rooms[name] for name in names
                                                if name in self.rooms)) or 0)


def _copies_in(shape: Room, rooms: Iterable[Room]) -> int | None:
    taken = 0
    for room in rooms:
        fit = copies_that_fit(shape, room)
        if fit is None:
            return None
        taken += fit
    return taken


def homeless(pods: Sequence[Pod], front: Sequence[tuple[str, Room]]) -> list[Pod]:
    fits_somewhere: dict[Room, bool] = {}  # most pods share their shape with many others
    stranded = []
    for pod in pods:
        need = _room(pod.requests)
        fits = fits_somewhere.get(need)
        if fits is None:
            fits = fits_somewhere[need] = any(_fits(need, room) for _, room in front)
        if not fits:
            stranded.append(pod)
    return stranded


def new_node_need(moving: Sequence[Room], stranded: Room, spare: Room) -> Room:
    """What the one new node must hold in any placement of the moving pods: the pods that
    fit no other machine (`stranded`), and whatever the others' spare room added up
    cannot take, whichever is more in each resource."""
    moved = _sum(moving)
    return (max(stranded[0], moved[0] - spare[0], 0), max(stranded[1], moved[1] - spare[1], 0),
            max(stranded[2], moved[2] - spare[2], 0))


def copies_that_fit(shape: Room, room: Room) -> int | None:
    """How many pods of one shape a machine's free room takes (None: any number)."""
    counts = [max(0, have) // need for need, have in zip(shape, room, strict=True) if need > 0]
    return min(counts) if counts else None


def identical_spill(moving: Sequence[Room], free: FreeRoom, gone: set[str]) -> Room:
    """When every moving pod has the same requests, what the new node must hold: the pods
    the machines other than `gone` cannot take whole (room for 1.5 pods takes one)."""
    shapes = set(moving)
    if len(shapes) != 1:
        return (0, 0, 0)
    (shape,) = shapes
    taken = free.copies_without(shape, gone)
    if taken is None:
        return (0, 0, 0)
    left = max(0, len(moving) - taken)
    return (shape[0] * left, shape[1] * left, shape[2] * left)


def room_left(allocatable: Mapping[str, int], requested: Mapping[str, int]) -> Room:
    """A machine's free room as the solver counts it (its allocatable less its bound
    pods' and DaemonSets' requests); a resource it does not list bounds nothing here."""
    def left(name: str) -> int:
        if name not in allocatable:
            return _UNBOUNDED
        return allocatable[name] - requested.get(name, 0)

    return (left(CPU), left(MEMORY), left(PODS))


_UNBOUNDED = 2**62


def _might_fit(need: Room, room: Room) -> bool:
    """`_fits`, except that a resource the pod does not ask for never refuses it."""
    return all(want <= have for want, have in zip(need, room, strict=True) if want > 0)


def could_all_land(pods: Sequence[Pod], rooms: Sequence[Room]) -> bool:
    """Whether `pods` might all land on machines with these free rooms; False only when
    they cannot, by their cpu, memory and pod-count requests alone: a pod that fits no
    machine, more requested than the rooms hold added up, or (pods alike) more pods than
    the rooms take whole."""
    shapes = [_room(pod.requests) for pod in pods]
    for shape in set(shapes):
        if not any(_might_fit(shape, room) for room in rooms):
            return False
    if not _fits(_sum(shapes), _sum(map(_spare, rooms))):
        return False
    if len(set(shapes)) == 1:
        taken = _copies_in(shapes[0], rooms)
        if taken is not None and taken < len(shapes):
            return False
    return True


@dataclass(frozen=True)
class Offer:
    """An instance type a NodePool may launch, with what a new node of it holds."""

    name: str
    price: float
    allocatable: Room
    overhead: Room  # the DaemonSets a node of this type runs in the NodePool


def offers(pools: Mapping[str, PoolContext]) -> list[Offer]:
    """Every NodePool's launchable types, in the NodePools' and their catalogs' order."""
    found = []
    for pool in pools.values():
        requirements = pool.template.requirements
        types = list(pool.instance_types.values())
        for instance_type, compatible in zip(types, compatible_mask(types, requirements),
                                             strict=True):
            if not compatible:
                continue
            price = cheapest_price(instance_type, requirements)
            if price is not None:
                overhead = pool.daemon_overhead((instance_type.name,))
                found.append(Offer(instance_type.name, price,
                                   _room(instance_type.allocatable), _room(overhead)))
    return found


def hopeless(
    candidates: Sequence[Candidate],
    moving: Sequence[Pod],
    free: FreeRoom,
    launchable: Sequence[Offer],
) -> str | None:
    """Why no consolidation of these candidates can exist, or None when one might."""
    gone = {c.name for c in candidates}
    stranded = homeless(moving, free.front_without(gone))
    stranded_need = _sum(_room(pod.requests) for pod in stranded)
    shapes = [_room(pod.requests) for pod in moving]
    need = new_node_need(shapes, stranded_need, free.total_without(gone))
    whole = identical_spill(shapes, free, gone)
    need = (max(need[0], whole[0]), max(need[1], whole[1]), max(need[2], whole[2]))
    if not any(need):
        return None
    max_price = sum(c.price for c in candidates)
    holding: list[tuple[float, str]] = []
    for offer in launchable:
        overhead = offer.overhead
        total = (need[0] + overhead[0], need[1] + overhead[1], need[2] + overhead[2])
        if not _fits(total, offer.allocatable):
            continue
        if offer.price < max_price - 1e-9:
            return None
        holding.append((offer.price, offer.name))
    wanted = f"{format_quantity(need[0], CPU)} cpu, {need[1] / 1000 / 2**20:.0f}Mi memory"
    cheapest = (f"; the cheapest that does is {min(holding)[1]} at ${min(holding)[0]:.4f}/h"
                if holding else "")
    if stranded and need == stranded_need:
        names = ", ".join(pod.key for pod in stranded[:3])
        more = f" and {len(stranded) - 3} more" if len(stranded) > 3 else ""
        homeless_pods = f"pods {names}{more} fit on no other node"
    else:
        homeless_pods = "the other nodes' free room added up is too small for the pods"
    return (f"can't replace with a cheaper node: {homeless_pods}, and no instance type "
            f"cheaper than the node(s) (${max_price:.4f}/h) holds them "
            f"({wanted} with the DaemonSets){cheapest}")
