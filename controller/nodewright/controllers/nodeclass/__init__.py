"""The EC2NodeClass controllers: status, termination and cloud garbage collection, the
catalog refresh and the SSM alias invalidation (Karpenter AWS's nodeclass and providers
controllers)."""
