"""The Nodewright Pulumi program: one module per concept, wired in `infra.program`."""
