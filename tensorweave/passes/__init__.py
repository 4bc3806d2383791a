"""Graph-to-graph passes; each module registers the pipeline stage it belongs to."""
