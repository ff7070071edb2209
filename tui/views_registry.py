"""The eight screens in key order (1–8)."""

VIEW_IDS = ("overview", "quota", "priority", "elastic", "queue", "nodes", "timeline",
            "incidents")
VIEW_TITLES = ("Overview", "Quota", "Priority", "Elastic", "Queue", "Nodes", "Timeline",
               "Incidents")
