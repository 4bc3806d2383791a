"""Small real datasets for examples and tests (no network access needed)."""
