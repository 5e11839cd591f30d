"""The live instance catalog: DescribeInstanceTypes and DescribeInstanceTypeOfferings (read
again every 12 hours, as Karpenter's instance type controller refreshes them), prices, and the
unavailable-offerings cache, fed through the scheduling engine's `catalog_from_facts` (what
`build_catalog` does, from answers already read).

Built once, reused (Karpenter's instance type and offering caches): each answer of
DescribeInstanceTypes is read into facts once, and each catalog is kept under what it depends
on, the node settings, the subnets' zones and zone ids, the placement group, the answers it
was built from and the version of the prices. The unavailable offerings are not in the key:
a catalog remembers the sequence numbers it was built at, and when they move only the
types whose offerings may have changed are built again (a capacity type or zone marked out
rebuilds every type). Callers get a new list of the same, shared `InstanceType`s: read-only,
as `offline_catalog`'s; whoever changes one makes a changed copy (`dataclasses.replace`).
Answers, and catalogs nothing but their inputs decide, are shared with the process's other
catalogs (`shared_catalogs`).

A refresh that fails keeps the answer read before (Karpenter's instance type controller
returns the error before replacing what it holds) and is tried again after
controller-runtime's backoff, 5 ms doubling to 1,000 s; only the first read, with nothing
to keep, fails the listing."""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final

from nodewright.cloud.aws import shared_catalogs
from nodewright.cloud.aws.clock import Seconds, TTLCache, system_clock
from nodewright.cloud.aws.errors import aws_call, describe_failure
from nodewright.cloud.aws.unavailable import UnavailableOfferings, none_out
from nodewright.cloud.provider import CloudProviderError
from nodewright.runtime.ratelimit import RECONCILE_BACKOFF
from nodewright.scheduling.allocatable import NodeSettings, ProviderSettings, node_settings
from nodewright.scheduling.catalog import InstanceType, catalog_from_facts
from nodewright.scheduling.ec2_info import InstanceTypeFacts
from nodewright.scheduling.pricing import PriceSource, price_identity, price_version

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client

    from nodewright.api.ec2nodeclass import EC2NodeClass

DESCRIBE_CACHE_SECONDS: Final = 12 * 3600.0
# Karpenter's DescribeInstanceTypes filters: HVM types of the architectures Kubernetes runs.
INSTANCE_TYPE_FILTERS: Final = (
    {"Name": "supported-virtualization-type", "Values": ["hvm"]},
    {"Name": "processor-info.supported-architecture", "Values": ["x86_64", "arm64"]},
)
# Built catalogs kept (node classes with different settings, zones or placement groups).
CACHED_CATALOGS: Final = 16

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Read:
    """One DescribeInstanceTypes and one DescribeInstanceTypeOfferings answer, read."""

    types: list[Mapping[str, Any]]
    offerings: list[Mapping[str, Any]]
    facts: tuple[InstanceTypeFacts, ...]
    facts_by_name: dict[str, InstanceTypeFacts]
    zones_by_type: dict[str, frozenset[str]]
    generation: int


@dataclass(frozen=True)
class _Built:
    """A catalog and the unavailable offerings' sequence numbers it was built at."""

    types: tuple[InstanceType, ...]
    seqnum: int
    type_seqnums: dict[str, int]


@dataclass
class LiveCatalog:
    ec2: EC2Client
    region: str
    prices: PriceSource
    unavailable: UnavailableOfferings
    clock: Seconds = system_clock
    provider: ProviderSettings = field(default_factory=ProviderSettings)
    catalogs_kept: int = CACHED_CATALOGS
    # InstanceTypes built so far (a catalog reused builds none).
    types_built: int = field(init=False, default=0)
    _described: TTLCache[str, list[Mapping[str, Any]]] = field(init=False)
    _read: _Read | None = field(init=False, default=None)
    _built: OrderedDict[tuple[object, ...], _Built] = field(init=False,
                                                           default_factory=OrderedDict)
    # "types" / "offerings" -> (failed refreshes in a row, when the last one was asked)
    _failed: dict[str, tuple[int, float]] = field(init=False, default_factory=dict)
    # The zones last logged as discovered.
    _zones_logged: list[str] | None = field(init=False, default=None)
    # One caller builds at a time; the others then find its catalog.
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self._described = TTLCache(DESCRIBE_CACHE_SECONDS, self.clock)

    def instance_types(
        self,
        node_class: EC2NodeClass | None,
        zones: Collection[str] | None = None,
        zone_ids: Mapping[str, str] | None = None,
        placement_strategy: str | None = None,
        placement_group: str | None = None,
    ) -> list[InstanceType]:
        """`zones`: the zones of the node class's subnets. As Karpenter, every zone EC2 offers
        a type in is listed, unavailable (but priced) where there is no subnet; the type's
        zones stay the subnets' (`InstanceType.zones`). `placement_strategy`: the strategy
        of the node class's placement group, which keeps the types that support it;
        capacity errors inside `placement_group` count for it too."""
        settings = replace(node_settings(None, node_class, self.provider),
                           placement_strategy=placement_strategy)
        with self._lock:
            read = self._read_described()
            prices = price_version(self.prices)
            if prices is None:
                # A price source that keeps no version: nothing built from it is reused.
                return self._build(read, read.facts, settings, zones, zone_ids, placement_group)
            seqnum = self.unavailable.seqnum()
            key = (settings.cache_key(), None if zones is None else frozenset(zones),
                   tuple(sorted((zone_ids or {}).items())), placement_group, read.generation,
                   prices)
            built = self._built.get(key)
            if built is None or built.seqnum != seqnum:
                built = self._rebuilt(built, read, seqnum, settings, zones, zone_ids,
                                      placement_group, prices)
                self._keep(key, built)
            self._built.move_to_end(key)
            return list(built.types)

    def _rebuilt(self, built: _Built | None, read: _Read, seqnum: int, settings: NodeSettings,
                 zones: Collection[str] | None, zone_ids: Mapping[str, str] | None,
                 placement_group: str | None, prices: int) -> _Built:
        """The catalog at `seqnum`: built whole (or found built by another catalog given the
        same), or from `built` with only the types whose unavailable offerings changed
        since built again (Karpenter's per-type SeqNum)."""
        if built is None:
            stale = set(read.facts_by_name)
            facts: Collection[InstanceTypeFacts] = read.facts
        else:
            stale = {name for name, number in built.type_seqnums.items()
                     if self.unavailable.type_seqnum(name) != number}
            facts = [read.facts_by_name[name] for name in sorted(stale)]
        # Read before building: a change while building makes the next call build again.
        numbers = {name: self.unavailable.type_seqnum(name) for name in stale}
        if built is None:
            fresh = self._whole(read, settings, zones, zone_ids, placement_group, prices)
        else:
            fresh = self._build(read, facts, settings, zones, zone_ids, placement_group)
        # Which types are listed never depends on unavailable offerings: only these matter.
        listed = {it.name: numbers[it.name] for it in fresh}
        if built is None:
            return _Built(tuple(fresh), seqnum, listed)
        by_name = {it.name: it for it in fresh}
        return _Built(tuple(by_name.get(it.name, it) for it in built.types), seqnum,
                      {**built.type_seqnums, **listed})

    def _whole(self, read: _Read, settings: NodeSettings, zones: Collection[str] | None,
               zone_ids: Mapping[str, str] | None, placement_group: str | None,
               prices: int) -> list[InstanceType]:
        """Every type, as another catalog built it from the same inputs when one did."""
        unavailable = self.unavailable.snapshot(placement_group)
        identity = price_identity(self.prices)
        if identity is None or unavailable is not none_out:
            return self._build(read, read.facts, settings, zones, zone_ids, placement_group,
                               unavailable)
        inputs = (self.region, identity, prices, settings.cache_key(),
                  None if zones is None else frozenset(zones),
                  tuple(sorted((zone_ids or {}).items())), placement_group)
        shared = shared_catalogs.CATALOGS.get(read.facts, read.zones_by_type, inputs)
        if shared is None:
            shared = tuple(self._build(read, read.facts, settings, zones, zone_ids,
                                       placement_group, unavailable))
            shared_catalogs.CATALOGS.put(read.facts, read.zones_by_type, inputs, shared)
        return list(shared)

    def _build(self, read: _Read, facts: Collection[InstanceTypeFacts], settings: NodeSettings,
               zones: Collection[str] | None, zone_ids: Mapping[str, str] | None,
               placement_group: str | None,
               unavailable: Callable[[str, str, str], bool] | None = None) -> list[InstanceType]:
        catalog = catalog_from_facts(
            facts,
            read.zones_by_type,
            self.region,
            self.prices,
            settings,
            subnet_zones=zones,
            zone_ids=zone_ids,
            unavailable=(unavailable if unavailable is not None
                         else self.unavailable.snapshot(placement_group)),
        )
        self.types_built += len(catalog)
        return catalog

    def _keep(self, key: tuple[object, ...], built: _Built) -> None:
        """Keep `built`, dropping what can never be asked for again (older answers or
        prices: the key's last two parts) and then the least recently used beyond
        `catalogs_kept`."""
        current = key[-2:]
        for old in [old for old in self._built if old[-2:] != current]:
            del self._built[old]
        self._built[key] = built
        while len(self._built) > self.catalogs_kept:
            self._built.popitem(last=False)

    def _read_described(self) -> _Read:
        """The described types and offerings, read into facts once per answer. A refresh
        that answers the same keeps the earlier answer, so its catalogs stay valid
        (Karpenter's ChangeMonitor on the two answers)."""
        types, offerings = self._instance_type_data(), self._offering_data()
        read = self._read
        if read is not None and read.types is types and read.offerings is offerings:
            return read
        facts = read.facts if read is not None and read.types is types else (
            shared_catalogs.TYPE_FACTS.read(types))
        zones_by_type = (read.zones_by_type if read is not None and read.offerings is offerings
                         else shared_catalogs.OFFERED_ZONES.read(offerings))
        generation = 0 if read is None else read.generation + 1
        self._read = _Read(types, offerings, facts, {f.name: f for f in facts}, zones_by_type,
                           generation)
        return self._read

    def _kept(self, kind: str,
              previous: list[Mapping[str, Any]] | None) -> list[Mapping[str, Any]] | None:
        """`previous`, to answer with rather than ask again, while the backoff after a
        failed refresh of `kind` runs; None: ask."""
        failed = self._failed.get(kind)
        if failed is None or self.clock() - failed[1] >= RECONCILE_BACKOFF.delay(failed[0]):
            return None
        return previous

    def _refresh_failed(self, kind: str, error: CloudProviderError,
                        previous: list[Mapping[str, Any]] | None) -> list[Mapping[str, Any]]:
        """The answer read before, when there is one, after a refresh that failed."""
        if previous is None:
            raise error
        failures = self._failed.get(kind, (0, 0.0))[0] + 1
        self._failed[kind] = (failures, self.clock())
        log.warning("%s failed, keeping the last answer: %s", error.call, error)
        return previous

    def _instance_type_data(self) -> list[Mapping[str, Any]]:
        cached = self._described.get("types")
        if cached is not None:
            return cached
        previous = self._read.types if self._read else None
        kept = self._kept("types", previous)
        if kept is not None:
            return kept
        found: list[Mapping[str, Any]] = []
        try:
            with aws_call("ec2:DescribeInstanceTypes", f"region {self.region}"):
                pages = self.ec2.get_paginator("describe_instance_types").paginate(
                    Filters=[dict(f) for f in INSTANCE_TYPE_FILTERS],  # type: ignore[misc]
                    PaginationConfig={"PageSize": 100})
                for page in pages:
                    found.extend(page.get("InstanceTypes", []))
        except CloudProviderError as error:
            return self._refresh_failed("types", error, previous)
        self._failed.pop("types", None)
        if not found:
            # As Karpenter's List: no catalog from an empty answer. Not kept: asked again at
            # the next read, as after a failed call.
            raise _empty_answer("ec2:DescribeInstanceTypes", self.region,
                                "no instance types found")
        kept = _unless_unchanged(previous, found)
        if kept is not previous:  # Karpenter's ChangeMonitor, at debug level
            log.debug("discovered instance types", extra={"count": len(kept)})
        self._described.put("types", kept)
        return kept

    def _offering_data(self) -> list[Mapping[str, Any]]:
        cached = self._described.get("offerings")
        if cached is not None:
            return cached
        previous = self._read.offerings if self._read else None
        kept = self._kept("offerings", previous)
        if kept is not None:
            return kept
        found: list[Mapping[str, Any]] = []
        try:
            with aws_call("ec2:DescribeInstanceTypeOfferings", f"region {self.region}"):
                paginator = self.ec2.get_paginator("describe_instance_type_offerings")
                # 1,000 a page, EC2's maximum (as Karpenter asks).
                for page in paginator.paginate(LocationType="availability-zone",
                                               PaginationConfig={"PageSize": 1000}):
                    found.extend(page.get("InstanceTypeOfferings", []))
        except CloudProviderError as error:
            return self._refresh_failed("offerings", error, previous)
        self._failed.pop("offerings", None)
        if not found:
            raise _empty_answer("ec2:DescribeInstanceTypeOfferings", self.region,
                                "no instance type offerings found")
        kept = _unless_unchanged(previous, found)
        if kept is not previous:  # Karpenter's ChangeMonitor, at debug level
            log.debug("discovered offerings for instance types", extra={
                "instance-type-count": len({str(o.get("InstanceType")) for o in kept})})
            zones = sorted({str(o.get("Location")) for o in kept})
            if zones != self._zones_logged:
                self._zones_logged = zones
                log.debug("discovered zones", extra={"zones": zones})
        self._described.put("offerings", kept)
        return kept


def _empty_answer(call: str, region: str, message: str) -> CloudProviderError:
    resource = f"region {region}"
    return CloudProviderError(describe_failure(call, resource, "", message), call=call,
                              resource=resource, cloud_message=message)


def _unless_unchanged(previous: list[Mapping[str, Any]] | None,
                      found: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The earlier answer when the new one says the same (its catalogs stay valid)."""
    return previous if previous is not None and previous == found else found
