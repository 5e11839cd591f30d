"""The four disruption methods, one module each (`order.METHODS` lists them in the order
the loop tries them), and the validation that re-checks a consolidation command 15 seconds
after it was decided (`validation`).

- emptiness: every empty candidate past consolidateAfter, as many as the Empty budget
  allows, in one delete command;
- drift: one drifted candidate (empty ones first, then the longest drifted), replaced by
  whatever the solver says its pods need;
- multi-node consolidation: the largest prefix (binary search, at most 100 candidates, a
  1-minute compute budget) of the best-value candidates that can go at once;
- single-node consolidation: the candidates one at a time (3-minute compute budget),
  NodePools interleaved so one large pool does not starve the others. Where results must
  not depend on the machine (the simulator), a count of simulations per pass stands in for
  the compute budget; a pass that stops there starts the next one with the candidates it
  did not reach, as Karpenter puts the NodePools its timed-out pass did not reach first.

The pass they share is `disruption_pass.Pass`; what the two consolidations share (and
emptiness, a consolidation of empty nodes) is `consolidation`. Every candidate a method
looks at gets a verdict; see `verdict_publishing`.
"""
