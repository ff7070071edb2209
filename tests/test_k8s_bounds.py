"""The Kubernetes collector stays bounded against a hostile or broken API server
(issue #35): a server that trickles a byte a second is cut at the timeout, a huge
answer is refused at ``max_answer_bytes`` after reading at most that, and ``collect``
says so in one line instead of raising or hanging. Against tests/faults/fake_kube.py.

Times are never asserted: a join with a generous deadline only keeps a regression
from hanging the suite; the test then checks the stale reason."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
from faults.fake_kube import FakeKube, fake_kube

from quotatop.collectors.k8s.collector import KubernetesCollector, KubernetesConfig
from quotatop.collectors.model import Snapshot

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 3.0
GUARD = TIMEOUT + 10  # only so a regression fails instead of hanging


def collector(fake: FakeKube, tmp_path: Path, **kw: object) -> KubernetesCollector:
    opts: dict[str, object] = {
        "kubeconfig": str(fake.write_kubeconfig(tmp_path / "kubeconfig")),
        "connect_timeout": TIMEOUT,
        "watch_timeout": 30.0,
        "backoff_initial": 5.0,  # one try in a test: retries are not what is tested
        "backoff_max": 5.0,
        "sync_timeout": 30.0,  # longer than the guard: the request's own bound must end it
    }
    opts.update(kw)
    return KubernetesCollector(KubernetesConfig(**opts))  # type: ignore[arg-type]


def collect_within(col: KubernetesCollector, deadline: float = GUARD) -> Snapshot:
    """``col.collect()`` from a thread joined with a deadline: it must end, and return."""
    out: list[object] = []

    def run() -> None:
        try:
            out.append(col.collect())
        except BaseException as exc:  # collect must never raise: the test says so below
            out.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(deadline)
    assert not t.is_alive(), f"collect() still running after {deadline:g}s"
    assert len(out) == 1 and isinstance(out[0], Snapshot), out
    return out[0]


def one_snapshot(fake: FakeKube, tmp_path: Path, **kw: object) -> Snapshot:
    """A collector of ``fake``, one ``collect`` (bounded), closed (bounded)."""
    col = collector(fake, tmp_path, **kw)
    try:
        return collect_within(col)
    finally:
        close_within(col)


def close_within(col: KubernetesCollector, deadline: float = GUARD) -> None:
    t = threading.Thread(target=col.close, daemon=True)
    t.start()
    t.join(deadline)
    assert not t.is_alive(), f"close() still running after {deadline:g}s"


def test_good_server_gives_a_fresh_snapshot(tmp_path: Path) -> None:
    with fake_kube("good") as fake:
        snap = one_snapshot(fake, tmp_path)
        assert not snap.stale, snap.stale_reason
        assert [t.name for t in snap.teams] == ["team-a"]


@pytest.mark.parametrize("mode", ["trickle-headers", "trickle-body"])
def test_trickling_discovery_is_cut_at_the_timeout(mode: str, tmp_path: Path) -> None:
    with fake_kube(mode, only="/apis") as fake:
        snap = one_snapshot(fake, tmp_path)
        assert snap.stale
        assert snap.stale_reason == f"k8s: timed out after {TIMEOUT:g}s waiting for /apis"


@pytest.mark.parametrize("mode", ["trickle-headers", "trickle-body"])
def test_trickling_list_is_cut_at_the_timeout(mode: str, tmp_path: Path) -> None:
    with fake_kube(mode, only="/api/v1/pods", on="list") as fake:
        snap = one_snapshot(fake, tmp_path)
        assert snap.stale
        assert snap.stale_reason is not None
        assert snap.stale_reason.startswith(
            f"k8s: timed out after {TIMEOUT:g}s waiting for /api/v1/pods"), snap.stale_reason
        assert "\n" not in snap.stale_reason


@pytest.mark.parametrize("mode", ["trickle-headers", "trickle-body"])
def test_trickling_watch_blocks_neither_collect_nor_close(mode: str, tmp_path: Path) -> None:
    with fake_kube(mode, only="/api/v1/pods", on="watch") as fake:
        col = collector(fake, tmp_path)
        try:
            snap = collect_within(col)
            assert not snap.stale, snap.stale_reason  # the lists all came back
            deadline = time.monotonic() + GUARD
            while not any("watch=true" in p and "/pods" in p for p in fake.requests):
                assert time.monotonic() < deadline, "the pods watch was never sent"
                time.sleep(0.05)
            time.sleep(0.3)  # the watch is now held in the trickle
            assert not collect_within(col).stale
            thread = col.reflectors["pods"]._thread
            assert thread is not None and thread.is_alive()
        finally:
            close_within(col)
        # close() stops the reflector, so its thread ends instead of waiting on the trickle.
        thread.join(GUARD)
        assert not thread.is_alive()


def _rss() -> int:
    return psutil.Process().memory_info().rss


def _collect_measuring_rss(col: KubernetesCollector) -> tuple[Snapshot, int]:
    """(``col.collect()``, the growth of this process's peak RSS while it ran); closes."""
    peak = [_rss()]
    base = peak[0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.01):
            peak[0] = max(peak[0], _rss())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        snap = collect_within(col)
    finally:
        done.set()
        sampler.join(5)
        close_within(col)
    return snap, max(peak[0], _rss()) - base


@pytest.mark.parametrize("path", ["/api/v1/pods", "/apis"])
def test_huge_answer_is_refused_at_the_cap_in_bounded_memory(path: str, tmp_path: Path) -> None:
    with fake_kube("huge", only=path, on="list") as fake:
        snap, growth = _collect_measuring_rss(collector(fake, tmp_path))
        assert snap.stale
        assert snap.stale_reason is not None
        assert snap.stale_reason.startswith(f"k8s: answer larger than 64 MiB from {path}"), \
            snap.stale_reason
        assert "\n" not in snap.stale_reason
        assert growth < 200 << 20, f"RSS grew by {growth >> 20} MiB"
        assert fake.sent_huge < fake.huge_bytes  # it stopped reading: the server gave up


@pytest.mark.parametrize("path", ["/api/v1/pods", "/apis"])
def test_huge_error_answer_is_refused_at_its_cap_in_bounded_memory(
        path: str, tmp_path: Path) -> None:
    # Issue #35: the kubernetes client read an error answer's body whole (ApiException
    # is made from all of it), so a 600 MB HTTP 500 was cut only by the deadline.
    with fake_kube("huge-error", only=path, on="list") as fake:
        snap, growth = _collect_measuring_rss(collector(fake, tmp_path))
        assert snap.stale
        assert snap.stale_reason is not None
        assert snap.stale_reason.startswith(
            f"k8s: HTTP 500 answer larger than 1 MiB from {path}"), snap.stale_reason
        assert "\n" not in snap.stale_reason
        assert growth < 200 << 20, f"RSS grew by {growth >> 20} MiB"
        assert fake.sent_huge < fake.huge_bytes


def test_snapshot_cli_on_a_trickling_server_is_one_line_and_exit_2(tmp_path: Path) -> None:
    with fake_kube("trickle-headers") as fake:
        kc = fake.write_kubeconfig(tmp_path / "kubeconfig")
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
        env.update(KUBECONFIG=str(kc), HOME=str(tmp_path))
        proc = subprocess.run(
            [sys.executable, "-m", "quotatop", "snapshot", "--source", "k8s",
             "--timeout", f"{TIMEOUT:g}"],
            capture_output=True, text=True, env=env, cwd=ROOT, timeout=GUARD + 20,
            stdin=subprocess.DEVNULL, check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        f"quotatop: k8s: no data: timed out after {TIMEOUT:g}s waiting for /apis"], proc.stderr
    assert proc.stdout == ""


# ---- an exec credential plugin ----------------------------------------------------------

EXEC_API = "client.authentication.k8s.io/v1"


def _plugin_kubeconfig(fake: FakeKube, tmp_path: Path, body: str) -> Path:
    """A kubeconfig whose user's credential comes from a plugin script ``slow-plugin``
    of ``body`` (Python), which first writes its pid to ``plugin.pid``."""
    script = tmp_path / "slow-plugin"
    script.write_text(f"#!{sys.executable}\nimport os, sys, time\n"
                      f"open({str(tmp_path / 'plugin.pid')!r}, 'a').write(f'{{os.getpid()}}\\n')\n"
                      f"{body}\n")
    script.chmod(0o755)
    return fake.write_kubeconfig(tmp_path / "plugin-kubeconfig", user={
        "exec": {"apiVersion": EXEC_API, "command": str(script), "interactiveMode": "Never"}})


def _plugin_pids(tmp_path: Path) -> list[int]:
    path = tmp_path / "plugin.pid"
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _kill_left(pids: list[int]) -> list[int]:
    """The pids still alive (killed now, so a failing test leaves nothing behind)."""
    left = []
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            if proc.status() == psutil.STATUS_ZOMBIE:
                continue
        except psutil.NoSuchProcess:
            continue
        left.append(pid)
        proc.kill()
    return left


CREDENTIAL = ('print(\'{"apiVersion": "%s", "kind": "ExecCredential", '
              '"status": {"token": "from-plugin"%s}}\')')


def test_a_hanging_exec_plugin_is_killed_at_the_timeout(tmp_path: Path) -> None:
    # Issue #35: the kubernetes client runs the plugin with no timeout: for ever.
    with fake_kube("good") as fake:
        kc = _plugin_kubeconfig(fake, tmp_path, "time.sleep(60)")
        try:
            snap = one_snapshot(fake, tmp_path, kubeconfig=str(kc))
        finally:
            left = _kill_left(_plugin_pids(tmp_path))
    assert snap.stale
    assert snap.stale_reason == f"k8s: credential plugin slow-plugin did not answer within " \
                                f"{TIMEOUT:g}s", snap.stale_reason
    assert len(_plugin_pids(tmp_path)) == 1 and left == []  # it ran, and is gone


def test_an_exec_plugin_that_answers_gives_its_token(tmp_path: Path) -> None:
    with fake_kube("good") as fake:
        kc = _plugin_kubeconfig(fake, tmp_path, CREDENTIAL % (EXEC_API, ""))
        col = collector(fake, tmp_path, kubeconfig=str(kc))
        try:
            snap = collect_within(col)
            assert not snap.stale, snap.stale_reason
            assert col._api_client.configuration.api_key["BearerToken"] == "Bearer from-plugin"
        finally:
            close_within(col)


def test_a_failing_exec_plugin_is_one_line_and_nothing_on_stderr(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    # The client logged the plugin's failure (logging.error: a line on the TUI's screen)
    # and went on with no credentials.
    with fake_kube("good") as fake:
        kc = _plugin_kubeconfig(fake, tmp_path, "sys.stderr.write('no \\x1b[31mlogin\\n'); "
                                                "sys.exit(3)")
        snap = one_snapshot(fake, tmp_path, kubeconfig=str(kc))
    assert snap.stale_reason == (
        "k8s: credential plugin slow-plugin failed (exit status 3): no \\x1b[31mlogin")
    assert capfd.readouterr().err == ""


def test_an_exec_credential_without_a_credential_is_one_line_and_nothing_on_stderr(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    with fake_kube("good") as fake:
        kc = _plugin_kubeconfig(fake, tmp_path, f"print('{{\"apiVersion\": \"{EXEC_API}\", "
                                                "\"kind\": \"ExecCredential\", \"status\": {}}')")
        snap = one_snapshot(fake, tmp_path, kubeconfig=str(kc))
    assert snap.stale_reason == ("k8s: credential plugin slow-plugin: its ExecCredential "
                                 "holds neither a token nor a client certificate and key")
    assert capfd.readouterr().err == ""


def test_an_exec_plugin_rerun_for_an_expired_token_is_bounded_too(tmp_path: Path) -> None:
    # The client reruns the plugin from a hook on each request once the token has expired:
    # the first run answers (already expired), the second hangs.
    pids = str(tmp_path / "plugin.pid")
    body = f"if len(open({pids!r}).read().split()) > 1:\n    time.sleep(60)\n" + \
        CREDENTIAL % (EXEC_API, ', "expirationTimestamp": "2000-01-01T00:00:00Z"')
    with fake_kube("good") as fake:
        kc = _plugin_kubeconfig(fake, tmp_path, body)
        try:
            snap = one_snapshot(fake, tmp_path, kubeconfig=str(kc))
        finally:
            left = _kill_left(_plugin_pids(tmp_path))
    assert snap.stale_reason == f"k8s: credential plugin slow-plugin did not answer within " \
                                f"{TIMEOUT:g}s", snap.stale_reason
    assert len(_plugin_pids(tmp_path)) == 2 and left == []


@pytest.mark.parametrize(("section", "why"), [
    ({"command": "/bin/true"}, "malformed request. missing key 'apiVersion'"),
    ({"apiVersion": EXEC_API}, "malformed request. missing key 'command'"),
    ({"apiVersion": EXEC_API, "command": "/bin/true", "env": 5},
     "'int' object is not iterable"),
    ({"apiVersion": EXEC_API, "command": ["/bin/true", "-x"]}, "command is not a file name"),
    ({"apiVersion": EXEC_API, "command": "/bin/true", "args": [{"a": 1}]},
     "args is not a list of words"),
])
def test_a_malformed_exec_section_is_one_line_and_nothing_on_stderr(
        section: dict, why: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    # The client builds its provider inside the ``except Exception`` that logs: a raw
    # "ERROR:root:exec: malformed request..." on the terminal, and a load without
    # credentials that then looked like the server's refusal.
    with fake_kube("good") as fake:
        kc = fake.write_kubeconfig(tmp_path / "exec-kubeconfig", user={"exec": section})
        snap = one_snapshot(fake, tmp_path, kubeconfig=str(kc))
    assert snap.stale_reason == f"k8s: kubeconfig user's exec section: {why}", \
        snap.stale_reason
    assert capfd.readouterr().err == ""
