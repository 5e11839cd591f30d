"""What the controller folders share, below all of them: the decision log, writing back a
reconcile's changes, log fields, the pod rules of disruption and eviction, NodePools'
registration health. Nothing here imports a sibling controller folder."""
