"""Test doubles that ship with ragtap: the scripted upstream used by the demo, the tests and the benchmarks."""
