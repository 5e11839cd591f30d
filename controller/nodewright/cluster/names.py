"""How the API server turns a `generateName` into a name, for the two places that do it
themselves: the in-memory API server, and the Kubernetes adapter (which names a create
itself so that a retry after a lost answer cannot store a second object)."""

from __future__ import annotations

from collections.abc import Callable

# The identity of one logical create, drawn once and kept on the object, so a create whose
# outcome is unknown finds what it stored (nodewright.cluster.kube.cluster.KubeCluster.create).
# Not copied from a NodeClaim to its Node.
CREATE_ID_ANNOTATION = "nodewright.io/create-id"

# Kubernetes' suffix alphabet: lower-case letters and digits without vowels and the
# characters easily confused with them (0, 1, 3), so no words appear by accident.
SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
SUFFIX_LENGTH = 5
# The server keeps 58 characters of a prefix, so a generated name fits 63.
MAX_GENERATED_PREFIX = 58


def generated_name(prefix: str, choose: Callable[[str], str]) -> str:
    """`prefix` cut to 58 characters and five characters drawn with `choose`."""
    return prefix[:MAX_GENERATED_PREFIX] + "".join(
        choose(SUFFIX_ALPHABET) for _ in range(SUFFIX_LENGTH))
