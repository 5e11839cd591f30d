"""Static NodePools (`spec.replicas` set): Karpenter's static provisioning and
deprovisioning controllers keep that many NodeClaims whatever the pods ask
(`provisioning`, `deprovisioning`); drift of their nodes is `disruption`'s static drift.
"""
