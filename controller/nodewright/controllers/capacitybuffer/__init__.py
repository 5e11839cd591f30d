"""CapacityBuffers: the buffer controller (Karpenter's capacitybuffer controller)."""
