"""The seven screens in key order (1–7)."""

VIEW_IDS = ("overview", "quota", "priority", "elastic", "queue", "nodes", "timeline")
VIEW_TITLES = ("Overview", "Quota", "Priority", "Elastic", "Queue", "Nodes", "Timeline")
