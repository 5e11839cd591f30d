"""NodeOverlays: the overlay controller (Karpenter's nodeoverlay controller)."""
