"""Interruption: the queue of EC2's interruption events and the instance status health
checks that act through it."""
