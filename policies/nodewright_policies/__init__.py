"""Nodewright's CrossGuard policies: pure rules plus thin pulumi_policy adapters."""
