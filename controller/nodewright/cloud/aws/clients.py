"""boto3 clients with botocore's standard retry mode (throttling and transient errors are
retried with exponential backoff and a retry quota). boto3 honours AWS_ENDPOINT_URL, so the
same code runs against AWS, moto or any AWS-compatible endpoint. Every client counts its
calls in Karpenter's AWS SDK request metrics (`sdk_metrics`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import boto3
from botocore.config import Config

from nodewright.cloud.aws.sdk_metrics import instrument

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client
    from mypy_boto3_eks import EKSClient
    from mypy_boto3_iam import IAMClient
    from mypy_boto3_pricing import PricingClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_ssm import SSMClient

MAX_ATTEMPTS: Final = 5


def retry_config(max_attempts: int = MAX_ATTEMPTS) -> Config:
    # `total_max_attempts` counts the first try too (botocore's `max_attempts` counts retries).
    return Config(retries={"mode": "standard", "total_max_attempts": max_attempts})


def pricing_region(region: str) -> str:
    """The Pricing API is served from a few regions only; pick the one Karpenter uses."""
    if region.startswith("ap-"):
        return "ap-south-1"
    if region.startswith("cn-"):
        return "cn-northwest-1"
    if region.startswith("eu-"):
        return "eu-central-1"
    return "us-east-1"


@dataclass
class AwsClients:
    """The clients the provider uses, all in one region."""

    region: str
    ec2: EC2Client
    ssm: SSMClient
    iam: IAMClient
    eks: EKSClient
    sqs: SQSClient
    pricing: PricingClient

    @classmethod
    def create(cls, region: str, session: boto3.session.Session | None = None) -> AwsClients:
        session = session or boto3.session.Session()
        config = retry_config()
        built = cls(
            region=region,
            ec2=session.client("ec2", region_name=region, config=config),
            ssm=session.client("ssm", region_name=region, config=config),
            iam=session.client("iam", region_name=region, config=config),
            eks=session.client("eks", region_name=region, config=config),
            sqs=session.client("sqs", region_name=region, config=config),
            pricing=session.client("pricing", region_name=pricing_region(region), config=config),
        )
        for client in (built.ec2, built.ssm, built.iam, built.eks, built.sqs, built.pricing):
            instrument(client)
        return built
