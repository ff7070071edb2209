"""Collectors: every source of cluster state maps into collectors.model.Snapshot."""
