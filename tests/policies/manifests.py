"""Compliant NodePool and EC2NodeClass manifests the CLI stories start from and break."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from nodewright.cli import main

NODEPOOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: general
spec:
  template:
    spec:
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: general
      expireAfter: 720h
      requirements:
        - key: karpenter.sh/capacity-type
          operator: In
          values: ["spot", "on-demand"]
        - key: karpenter.k8s.aws/instance-category
          operator: In
          values: ["c", "m", "r"]
  limits:
    cpu: "100"
    memory: 400Gi
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 30s
    budgets:
      - nodes: "10%"
"""

NODECLASS = """
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: general
spec:
  amiSelectorTerms:
    - alias: al2023@v20240807
  role: NodewrightNode-demo
  subnetSelectorTerms:
    - tags:
        karpenter.sh/discovery: demo
  securityGroupSelectorTerms:
    - tags:
        karpenter.sh/discovery: demo
  metadataOptions:
    httpTokens: required
    httpPutResponseHopLimit: 1
  blockDeviceMappings:
    - deviceName: /dev/xvda
      ebs:
        volumeSize: 50Gi
        volumeType: gp3
        encrypted: true
  tags:
    team: platform
    cost-center: "1234"
"""


def write(directory: Path, text: str, name: str = "manifest.yaml") -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def line_of(path: Path, fragment: str) -> int:
    """The 1-based line of the first line of `path` containing `fragment`."""
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if fragment in line:
            return number
    raise AssertionError(f"{fragment!r} is not in {path}")


def policy_check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    """Run `nodewright policy check ARGS...`: exit code, output lines, stderr."""
    code = main(["policy", "check", *args])
    captured = capsys.readouterr()
    return code, captured.out.splitlines(), captured.err
