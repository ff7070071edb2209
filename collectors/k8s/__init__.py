"""Kubernetes (and Kueue) as a quotatop source: ``collector.py`` (KubernetesCollector),
``config.py``, ``client.py`` (credentials), ``discovery.py`` (Kueue versions served),
``reflector.py`` (list then watch), ``mapping.py`` with ``kueue.py``, ``pods.py`` and
``quantity.py`` (objects → snapshot), ``visibility.py`` (Kueue queue positions).

Nothing here imports the ``kubernetes`` client at module level."""
