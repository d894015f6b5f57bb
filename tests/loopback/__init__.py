"""Loopback HTTP servers that speak real providers' wire formats, for SDK-level tests without a network."""
