"""Collectors: every source of cluster state maps into quotatop.collectors.model.Snapshot."""
