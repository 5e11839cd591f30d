"""`nodewright snapshot`: a live cluster as a scenario file the simulator can start from."""
