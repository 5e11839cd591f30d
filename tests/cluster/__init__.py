"""Tests of the in-memory cluster: its API server and the actors that play a cluster."""
