"""A kubeconfig's ``exec`` credential plugin, run under a deadline.

The kubernetes client runs the plugin (``ExecProvider.run``) with ``subprocess`` and no
timeout, so a plugin that hangs (a login helper waiting for a browser, a broken network
call) held the collector for ever, at load and again at each token refresh. And it
catches every error of the plugin into ``logging.error``: a line on the terminal, under
the TUI too, and then a load with no credentials at all.

``install()`` puts ``BoundedExecProvider`` in the client's place (its kube_config module
looks the name up at each use, so both the load and the refresh hook get it). It runs
the plugin in its own session (a process group; see ``collectors/procgroups.py``) with
stdin closed, reads its output under caps, and at the deadline kills the group. A
failure raises ``PluginAbort``, a BaseException so that it passes the client's
``except Exception``; ``during(timeout)`` (the load) and ``bounded_hook`` (the refresh)
turn it into ``PluginError``, an ordinary exception whose message is one line.

The plugin is told it is not interactive: under a deadline of seconds nobody could
answer a prompt, and the TUI owns the terminal. Log in first (``kubectl`` runs the same
plugin interactively) and quotatop uses the cached credential."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from quotatop.collectors import procgroups
from quotatop.collectors.pipes import ReadStopped, read_both
from quotatop.collectors.untrusted import printable

# An ExecCredential is a token or a certificate pair: a few KiB. More is not one.
STDOUT_CAP = 1 << 20
STDERR_CAP = 64 << 10
DEFAULT_TIMEOUT = 30.0  # a plugin run outside ``during`` (not quotatop's own load)
_CHUNK = 1 << 16
_EXEC_EXTENSION = "client.authentication.k8s.io/exec"

_local = threading.local()


class PluginError(Exception):
    """The plugin did not give a credential; the message is one line naming it."""


class PluginAbort(BaseException):
    """Raised through the kubernetes client, which swallows any Exception of the plugin;
    ``during`` and ``bounded_hook`` turn it into ``PluginError`` at our boundary."""


def _timeout() -> float:
    return getattr(_local, "timeout", None) or DEFAULT_TIMEOUT


@contextlib.contextmanager
def during(timeout: float) -> Iterator[None]:
    """Plugins this thread runs inside the block get ``timeout`` seconds; their failure
    leaves it as ``PluginError``."""
    prev = getattr(_local, "timeout", None)
    _local.timeout = timeout
    try:
        yield
    except PluginAbort as exc:
        raise PluginError(str(exc)) from None
    finally:
        _local.timeout = prev


def bounded_hook(hook: Callable[[Any], None], timeout: float) -> Callable[[Any], None]:
    """The client's refresh hook (it reruns the plugin once the token expires) with the
    same bound, raising ``PluginError`` into the request that asked for the token."""

    def refresh(configuration: Any) -> None:
        try:
            with during(timeout):
                hook(configuration)
        finally:
            # The client's hook sets a new hook of its own each time it runs: wrapped
            # again, or the next refresh would run unbounded.
            again = configuration.refresh_api_key_hook
            if again is not None and not getattr(again, "bounded", False):
                configuration.refresh_api_key_hook = bounded_hook(again, timeout)

    refresh.bounded = True  # type: ignore[attr-defined]

    return refresh


def _name(command: object) -> str:
    return printable(os.path.basename(str(command)))[:80] or "?"


def _first_line_of(exc: BaseException) -> str:
    text = str(exc).strip()
    if text.startswith("exec: "):  # the client's own prefix; ours names the section
        text = text[len("exec: "):]
    if isinstance(exc, KeyError):  # str(KeyError('name')) is just "'name'"
        text = f"missing key {text}"
    return _first_line(text.encode()) or type(exc).__name__


def _first_line(data: bytes) -> str:
    lines = data.decode(errors="replace").strip().splitlines()
    return printable(lines[0].strip())[:160] if lines else ""


def _read(proc: subprocess.Popen[bytes], deadline: float, timeout: float,
          name: str) -> tuple[bytes, bytes]:
    """stdout and stderr until both close, under their caps and the deadline."""
    try:
        return read_both(proc, deadline, STDOUT_CAP, STDERR_CAP, chunk=_CHUNK)
    except ReadStopped as exc:
        if exc.over_cap:
            raise PluginAbort(f"credential plugin {name}: {exc}") from None
        raise PluginAbort(
            f"credential plugin {name} did not answer within {timeout:g}s") from None


def run_plugin(args: list[str], env: dict[str, str], cwd: str | None,
               exec_info: dict[str, Any], api_version: str) -> dict[str, Any]:
    """The ``status`` of the ExecCredential the plugin prints; PluginAbort otherwise."""
    timeout = _timeout()
    name = _name(args[0])
    deadline = time.monotonic() + timeout
    try:
        proc = subprocess.Popen(
            [str(a) for a in args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, cwd=cwd, env={**env, "KUBERNETES_EXEC_INFO":
                                                  json.dumps(exec_info)},
            start_new_session=True)  # its own process group, id = its pid: killed whole
    except OSError as exc:
        raise PluginAbort(f"credential plugin {name}: {exc.strerror or exc}") from None
    procgroups.add(proc.pid)
    try:
        try:
            out, err = _read(proc, deadline, timeout, name)
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:  # closed its pipes, but did not exit
            raise PluginAbort(
                f"credential plugin {name} did not answer within {timeout:g}s") from None
        except BaseException:
            procgroups.kill(proc.pid)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=1.0)
            raise
    finally:
        if proc.returncode is None:  # TimeoutExpired above: not yet killed
            procgroups.kill(proc.pid)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=1.0)
        procgroups.discard(proc.pid)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
    if proc.returncode != 0:
        rc = proc.returncode
        why = f"killed by signal {-rc}" if rc < 0 else f"exit status {rc}"
        detail = _first_line(err)
        raise PluginAbort(f"credential plugin {name} failed ({why})"
                          + (f": {detail}" if detail else ""))
    try:
        data = json.loads(out)
    except (ValueError, RecursionError):
        raise PluginAbort(f"credential plugin {name}: output is not JSON") from None
    if not isinstance(data, dict) or not isinstance(data.get("status"), dict):
        raise PluginAbort(f"credential plugin {name}: output is not an ExecCredential")
    if data.get("apiVersion") != api_version:
        raise PluginAbort(f"credential plugin {name}: apiVersion "
                          f"{printable(str(data.get('apiVersion')))[:60]} is not {api_version}")
    status = data["status"]
    # Checked here: the client only logs an ExecCredential with neither (logging.error, a
    # line on the terminal) and goes on without credentials.
    if not (isinstance(status.get("token"), str) or (
            isinstance(status.get("clientCertificateData"), str)
            and isinstance(status.get("clientKeyData"), str))):
        raise PluginAbort(f"credential plugin {name}: its ExecCredential holds neither a "
                          "token nor a client certificate and key")
    return status


def install() -> None:
    """Put ``BoundedExecProvider`` in the kubernetes client's place; idempotent."""
    from kubernetes.config import kube_config
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.exec_provider import ExecProvider

    if getattr(kube_config.ExecProvider, "bounded", False):
        return

    class BoundedExecProvider(ExecProvider):  # type: ignore[misc]
        """The client's provider (its checks of the exec section), run bounded."""

        bounded = True

        def __init__(self, exec_config: Any, cwd: Any, cluster: Any = None) -> None:
            # The client builds the provider inside the same ``except Exception`` that
            # logs (``exec: malformed request. missing key 'apiVersion'``, an ``env`` item
            # without a name): that line went raw to the terminal and the load went on
            # with no credentials. Under quotatop's load it is one line of ours instead.
            try:
                super().__init__(exec_config, cwd, cluster)
                if not isinstance(self.args[0], str) or not self.args[0]:
                    raise ConfigException("command is not a file name")
                if not all(isinstance(a, str | int | float) for a in self.args[1:]):
                    raise ConfigException("args is not a list of words")
            except Exception as exc:
                if getattr(_local, "timeout", None) is None:
                    raise
                raise PluginAbort(f"kubeconfig user's exec section: {_first_line_of(exc)}"
                                  ) from None

        def run(self, previous_response: Any = None) -> dict[str, Any]:
            info: dict[str, Any] = {"apiVersion": self.api_version,
                                    "kind": "ExecCredential", "spec": {"interactive": False}}
            if previous_response:
                info["spec"]["response"] = previous_response
            if self.cluster:
                cluster = dict(self.cluster.value)
                for ext in cluster.get("extensions") or []:  # as the client passes it on
                    if isinstance(ext, dict) and ext.get("name") == _EXEC_EXTENSION:
                        cluster["config"] = ext.get("extension")
                        break
                info["spec"]["cluster"] = cluster
            try:
                return run_plugin(self.args, self.env, self.cwd, info, self.api_version)
            except PluginAbort as exc:
                if getattr(_local, "timeout", None) is None:
                    # Not quotatop's load or refresh: fail as the client's own provider.
                    raise ConfigException(str(exc)) from None
                raise

    kube_config.ExecProvider = BoundedExecProvider
