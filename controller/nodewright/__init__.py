"""Nodewright: group-less node autoscaling for Amazon EKS."""

__version__ = "0.1.0"
