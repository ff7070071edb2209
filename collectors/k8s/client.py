"""The API client: credentials from a kubeconfig or the pod's service account, and the
one raw GET the collector sends outside the reflectors (discovery, visibility).

The ``kubernetes`` package is imported when the client is loaded, not at import.
Loading never raises anything but ``SetupError``, whose message is one line."""

from __future__ import annotations

import json
import os
from typing import Any

from quotatop.collectors.k8s import exec_plugin, transport
from quotatop.collectors.k8s import reflector as rf
from quotatop.collectors.k8s.config import KubernetesConfig
from quotatop.collectors.k8s.kubeconfig import KubeconfigError, check_kubeconfig

Obj = dict[str, Any]


class SetupError(Exception):
    """The client cannot be set up; the message is one line for the status bar."""


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else type(exc).__name__


def load_client(config: KubernetesConfig) -> tuple[Any, str]:
    """An ``ApiClient`` for the configured cluster, and the server's URL."""
    from kubernetes import client
    from kubernetes import config as kube_config
    from kubernetes.config.config_exception import ConfigException

    cfg = client.Configuration()
    exec_plugin.install()  # a kubeconfig's exec plugin runs under --timeout, killed after
    path = config.kubeconfig or os.environ.get("KUBECONFIG") or None
    default_path = os.path.expanduser("~/.kube/config")
    try:
        if config.in_cluster:
            kube_config.load_incluster_config(client_configuration=cfg)
        elif path or os.path.exists(default_path):
            path = path or default_path
            if not os.path.exists(path):
                raise SetupError(f"kubeconfig {path} not found")
            try:
                check_kubeconfig(path, config.context)
            except KubeconfigError as exc:
                raise SetupError(str(exc)) from None
            with exec_plugin.during(config.connect_timeout):
                kube_config.load_kube_config(
                    config_file=path, context=config.context, client_configuration=cfg
                )
        else:
            try:
                kube_config.load_incluster_config(client_configuration=cfg)
            except ConfigException:
                raise SetupError(
                    "no kubeconfig (set --kubeconfig or KUBECONFIG) and not in a cluster"
                ) from None
    except SetupError:
        raise
    except exec_plugin.PluginError as exc:  # one line naming the plugin
        raise SetupError(str(exc)) from None
    except ConfigException as exc:
        raise SetupError(f"kubeconfig {path or ''}: {first_line(exc)}".strip()) from None
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        # Broken YAML, expired exec credentials and the like: one line, no traceback.
        raise SetupError(f"kubeconfig {path or ''}: {first_line(exc)}".strip()) from None
    if cfg.refresh_api_key_hook is not None:  # reruns the exec plugin once a token expires
        cfg.refresh_api_key_hook = exec_plugin.bounded_hook(
            cfg.refresh_api_key_hook, config.connect_timeout)
    # We retry with our own backoff; the client's retries would only hide outages.
    cfg.retries = 0
    # One pooled connection per watch plus the discovery calls.
    cfg.connection_pool_maxsize = 32
    api_client = client.ApiClient(cfg)
    transport.install(api_client)  # every request but a watch ends at its deadline
    return api_client, cfg.host


def _auth_header(api_client: Any) -> dict[str, str]:
    settings = api_client.configuration.auth_settings()
    bearer = settings.get("BearerToken")
    if bearer and bearer.get("value"):
        return {bearer["key"]: bearer["value"]}
    return {}


def get_json(
    api_client: Any, server: str, path: str, timeout: float, max_bytes: int = 64 << 20
) -> Obj:
    """GET ``path`` as JSON within ``timeout`` seconds overall and ``max_bytes``; a non-2xx
    answer raises as the reflectors' lists do, a slow or huge one ``transport.Refused``."""
    body = transport.bounded_body(
        lambda: api_client.call_api(
            "GET",
            server.rstrip("/") + path,
            header_params={"Accept": "application/json", **_auth_header(api_client)},
            _request_timeout=(timeout, timeout),
        ),
        timeout=timeout,
        cap=max_bytes,
        check=rf.check_response,
    )
    return json.loads(body)
