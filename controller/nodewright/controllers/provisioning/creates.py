"""NodeClaims created together (Karpenter's `Provisioner.CreateNodeClaims`): a
provisioning round's, a disruption command's replacements, a static NodePool's missing
replicas.

Every create is sent at once (`runtime.together`: up to a hundred in flight) while the
calling thread steps out of the state lock, and of the tests' world lock with it
(`StateLock.requesting`): the creates are requests, and the thread that waits for them must
not hold a lock their own threads need. Each create's refusal is its own: the others
stand, and the caller reports the ones that failed (`CreatesFailed`), as Karpenter
combines the errors of a round.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from nodewright.cluster.api import ApiError, ClusterAPI, Object
from nodewright.runtime.statelock import StateLock
from nodewright.runtime.together import run_together

Created = Object | ApiError


class CreatesFailed(ApiError):
    """Some of a round's creates were refused (each named); the others were stored."""

    def __init__(self, errors: Sequence[ApiError], total: int) -> None:
        first = errors[0]
        super().__init__(f"{len(errors)} of {total} NodeClaim creates failed: "
                         + "; ".join(str(error) for error in errors))
        self.errors = tuple(errors)
        self.status = first.status
        self.reason = first.reason


def create_together(cluster: ClusterAPI, lock: StateLock,
                    manifests: Sequence[Mapping[str, Any]]) -> list[Created]:
    """Each manifest created (the stored object) or the API's refusal, in the manifests'
    order. Together when other threads run (`lock.concurrent`, the operator); one after
    another under the simulator's single thread, so its generated names are the seed's."""
    calls: list[Callable[[], Created]] = [partial(_create, cluster, manifest)
                                          for manifest in manifests]
    with lock.requesting():
        return run_together(calls, parallel=lock.concurrent)


def failures(answers: Sequence[Created]) -> ApiError | None:
    """What to report for a round's refused creates: None when all were stored, the one
    error when one was refused (its status kept: a conflict stays a conflict), else
    `CreatesFailed` naming each."""
    errors = [answer for answer in answers if isinstance(answer, ApiError)]
    if not errors:
        return None
    if len(errors) == 1:
        return errors[0]
    return CreatesFailed(errors, len(answers))


def _create(cluster: ClusterAPI, manifest: Mapping[str, Any]) -> Created:
    try:
        return cluster.create(dict(manifest))
    except ApiError as error:
        return error
