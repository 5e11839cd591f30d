"""NodePool-level controllers: status (counts, validation, readiness), registration
health, and the drift hashes on NodePools and EC2NodeClasses."""
