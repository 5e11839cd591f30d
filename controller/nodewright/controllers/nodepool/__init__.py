"""NodePool-level controllers: the drift hashes on NodePools and EC2NodeClasses."""
