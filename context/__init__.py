"""Pressroom's context engine: pure, synchronous, deterministic assembly of model input."""
