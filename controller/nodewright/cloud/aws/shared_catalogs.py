"""What the live catalogs of one process share: an EC2 answer read once, and a catalog built
once, for every catalog given the same inputs (two providers, or one provider's catalog
again after its caches expired).

An answer equal to one kept stands for it: what was read from it (facts, zones) is the
kept one, found by value, never by who asked. A catalog is kept under everything it is
built from: the facts and zones (by identity: they come from here), the region, the node
settings, the subnets' zones and zone ids, the placement group, and the prices' identity and
version. Only catalogs nothing else changes are kept here: built from a price source that
names an identity (`price_identity`: the bundled offline prices) with no offering out of
capacity. The rest stay with the LiveCatalog that built them."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from typing import Any, Final, Generic, TypeVar

from nodewright.scheduling.catalog import InstanceType, offered_zones, read_instance_types
from nodewright.scheduling.ec2_info import InstanceTypeFacts

T = TypeVar("T")
Answer = list[Mapping[str, Any]]

# Answers kept of each kind (the current one and one more: a refresh's, or a test's
# variation), catalogs kept in all (the most recently used).
ANSWERS_KEPT: Final = 2
CATALOGS_KEPT: Final = 8


class ReadAnswers(Generic[T]):
    """Answers and what was read from each, the `kept` most recently used."""

    def __init__(self, read: Callable[[Answer], T], kept: int = ANSWERS_KEPT) -> None:
        self._read = read
        self._kept = kept
        self._entries: list[tuple[Answer, T]] = []
        self._lock = threading.Lock()

    def read(self, answer: Answer) -> T:
        with self._lock:
            for index, (known, value) in enumerate(self._entries):
                if known is answer or known == answer:
                    self._entries.append(self._entries.pop(index))
                    return value
        value = self._read(answer)
        with self._lock:
            self._entries.append((answer, value))
            del self._entries[:-self._kept]
        return value


class BuiltCatalogs:
    """Catalogs by what they were built from, the `kept` most recently used. The facts and
    zones they were built from are held with them, so their identities stay theirs."""

    def __init__(self, kept: int = CATALOGS_KEPT) -> None:
        self._kept = kept
        self._entries: OrderedDict[Hashable, tuple[object, object, tuple[InstanceType, ...]]] = (
            OrderedDict())
        self._lock = threading.Lock()

    @staticmethod
    def key(facts: tuple[InstanceTypeFacts, ...], zones_by_type: object,
            inputs: tuple[Hashable, ...]) -> Hashable:
        return (id(facts), id(zones_by_type), inputs)

    def get(self, facts: tuple[InstanceTypeFacts, ...], zones_by_type: object,
            inputs: tuple[Hashable, ...]) -> tuple[InstanceType, ...] | None:
        key = self.key(facts, zones_by_type, inputs)
        with self._lock:
            found = self._entries.get(key)
            if found is None or found[0] is not facts or found[1] is not zones_by_type:
                return None
            self._entries.move_to_end(key)
            return found[2]

    def put(self, facts: tuple[InstanceTypeFacts, ...], zones_by_type: object,
            inputs: tuple[Hashable, ...], types: tuple[InstanceType, ...]) -> None:
        with self._lock:
            self._entries[self.key(facts, zones_by_type, inputs)] = (facts, zones_by_type, types)
            while len(self._entries) > self._kept:
                self._entries.popitem(last=False)


TYPE_FACTS: Final = ReadAnswers(read_instance_types)
OFFERED_ZONES: Final = ReadAnswers(offered_zones)
CATALOGS: Final = BuiltCatalogs()
