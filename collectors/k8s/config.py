"""What the Kubernetes/Kueue collector is told: where the cluster is, which namespaces
are teams, and how hard to try (timeouts, paging, backoff)."""

from __future__ import annotations

from dataclasses import dataclass, field

SYSTEM_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease", "kueue-system")


@dataclass
class KubernetesConfig:
    kubeconfig: str | None = None  # None: $KUBECONFIG or ~/.kube/config, then in-cluster
    context: str | None = None
    in_cluster: bool = False
    team_label: str | None = None  # namespace label naming the team; None: the namespace
    exclude_namespaces: tuple[str, ...] = SYSTEM_NAMESPACES
    # Only these namespaces' teams and jobs (--namespace); None: every one not excluded.
    # Cluster-scoped state (ClusterQueues, nodes) stays whole: what the others hold of a
    # ClusterQueue becomes its unseen usage.
    namespaces: tuple[str, ...] | None = None
    kueue: bool | None = None  # None: use Kueue when its CRDs are served
    watch_timeout: float = 60.0
    # Also the bound on the whole of each request but a watch (connect, headers and body):
    # a server that trickles a byte a second is cut here, not once per byte (--timeout).
    connect_timeout: float = 5.0
    # An answer (one list page, one discovery document) larger than this is refused, read
    # in chunks up to it: a 500-object page of a big cluster is a few MiB, while a broken
    # or hostile server's endless answer must not take the machine's memory.
    max_answer_bytes: int = 64 << 20
    page_size: int = 500
    backoff_initial: float = 0.5
    backoff_max: float = 30.0
    sync_timeout: float = 10.0  # how long the first collect waits for the initial lists
    visibility: bool | None = None  # Kueue pending positions; None: when the API is served
    visibility_interval: float = 10.0  # seconds between polls (it cannot be watched)
    cluster: str = ""
    extra: dict[str, str] = field(default_factory=dict)

    def shown(self, namespace: str) -> bool:
        """Whether a namespace's teams and jobs are in the snapshot."""
        wanted = self.namespaces
        return namespace not in self.exclude_namespaces and (
            wanted is None or namespace in wanted
        )
