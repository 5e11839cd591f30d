"""Capacity reservation controllers: capacity-block expiration and the demotion of lapsed
reserved capacity to on-demand (Karpenter AWS's capacityreservation controllers)."""
