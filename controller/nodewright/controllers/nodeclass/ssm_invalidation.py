"""The SSM invalidation controller (Karpenter's providers.ssm.invalidation): every 30
minutes the AWS provider forgets the `latest` alias parameters whose image AWS has
deprecated, so a regression's AMI is left within half an hour instead of the parameter
cache's day."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from nodewright.cloud.aws.ssm_parameters import INVALIDATION_INTERVAL_SECONDS
from nodewright.cloud.capabilities import ParameterInvalidator
from nodewright.cloud.provider import CloudProviderError
from nodewright.runtime.reconciler import Result, Watch, singleton_key

log = logging.getLogger(__name__)


class SsmInvalidation:
    name = "providers.ssm.invalidation"

    def __init__(self, cloud: ParameterInvalidator) -> None:
        self.cloud = cloud

    @property
    def watches(self) -> Sequence[Watch]:
        # Started by the first EC2NodeClass the watch reports; then it keeps its own time.
        return (Watch("EC2NodeClass", lambda e: singleton_key(e) if e.type == "ADDED" else ()),)

    def reconcile(self, key: str) -> Result:
        try:
            dropped = self.cloud.invalidate_deprecated_parameters()
        except CloudProviderError as error:
            log.warning("checking alias images for deprecation: %s", error)
            return Result(requeue_after=INVALIDATION_INTERVAL_SECONDS)
        if dropped:
            log.info("alias parameters with a deprecated image are read again: %s",
                     ", ".join(dropped))
        return Result(requeue_after=INVALIDATION_INTERVAL_SECONDS)
