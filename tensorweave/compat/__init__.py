"""Compatibility layers; ``tensorweave.compat.v1`` is TensorFlow 1's API."""
