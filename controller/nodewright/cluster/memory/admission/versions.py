"""The Kubernetes versions whose API server the in-memory cluster can answer as.

Only what differs between them for the objects Nodewright writes is modelled: which schema
errors keep the API server from evaluating a CRD's CEL rules (apiextensions-apiserver's
`hasBlockingErr`). From 1.26 to 1.33 an enum violation ("Unsupported value") joined the
blocking types, so on 1.33 an object with a bad enum value in a CRD with CEL rules is also
told that "some validation rules were not checked".
"""

from __future__ import annotations

from dataclasses import dataclass

from nodewright.cluster.memory.admission.field_errors import (
    NOT_SUPPORTED,
    REQUIRED,
    TOO_LONG,
    TOO_MANY,
    TYPE_INVALID,
)


@dataclass(frozen=True, slots=True)
class KubernetesVersion:
    name: str
    # Schema error types after which CEL rules are not evaluated.
    cel_blocking: frozenset[str]

    @property
    def minor(self) -> tuple[int, int]:
        major, minor = self.name.removeprefix("v").split(".")[:2]
        return int(major), int(minor)


_OLD_BLOCKING = frozenset({REQUIRED, TYPE_INVALID, TOO_LONG, TOO_MANY})
EMULATED: dict[str, KubernetesVersion] = {
    version.name: version for version in (
        KubernetesVersion("v1.26.1", _OLD_BLOCKING),
        KubernetesVersion("v1.33.3", _OLD_BLOCKING | {NOT_SUPPORTED}),
    )
}
NEWEST = max(EMULATED.values(), key=lambda version: version.minor)


def emulated_version(name: str | None) -> KubernetesVersion:
    """The version called `name` (`v1.33`, `1.33.3` and `v1.33.3` alike), the newest when
    None; ValueError naming the versions there are otherwise."""
    if name is None:
        return NEWEST
    wanted = name.strip().removeprefix("v")
    for version in EMULATED.values():
        full = version.name.removeprefix("v")
        if wanted in (full, full.rsplit(".", 1)[0]):
            return version
    known = ", ".join(EMULATED)
    raise ValueError(f"the in-memory cluster emulates Kubernetes {known}, not {name!r}")
