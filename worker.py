"""Builds the Temporal worker (workflows + activities + data converter)."""
