"""A real Prometheus (Debian's /usr/bin/prometheus) on 127.0.0.1 for tests.

It scrapes ``team_exporter`` (and any ``extra_targets``) every second from its own
config and storage dir, optionally behind basic auth (``--web.config.file`` with a
bcrypt hash), and ``start`` waits — bounded — until the first scrape has landed.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from .team_exporter import TeamExporter

PROMETHEUS_BIN = os.environ.get("QUOTATOP_PROMETHEUS_BIN", "/usr/bin/prometheus")


class ComponentUnavailable(RuntimeError):
    """A real component could not be started; the message says why, in one line."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PrometheusServer:
    """Prometheus plus the exporter it scrapes; ``stop`` ends exactly those two."""

    def __init__(
        self,
        *,
        basic_auth: tuple[str, str] | None = None,
        scrape_interval: str = "1s",
        start_timeout: float = 45.0,
        extra_targets: dict[str, str] | None = None,
    ) -> None:
        self.basic_auth = basic_auth
        # job name -> "host:port": more endpoints to scrape beside team_exporter (a test of
        # an exporter starts it first, then a Prometheus that scrapes it).
        self.extra_targets = dict(extra_targets or {})
        self.scrape_interval = scrape_interval
        self.start_timeout = start_timeout
        self.exporter = TeamExporter()
        self.port = 0
        self.tmpdir: Path | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0
        self.first_scrape_at = 0.0  # when start() saw the exporter's samples land

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _write_config(self, exporter_port: int) -> list[str]:
        assert self.tmpdir is not None
        cfg = self.tmpdir / "prometheus.yml"
        cfg.write_text(
            "global:\n"
            f"  scrape_interval: {self.scrape_interval}\n"
            f"  evaluation_interval: {self.scrape_interval}\n"
            "scrape_configs:\n"
            "  - job_name: team-exporter\n"
            # Keep the exporter's own instance/namespace labels, as a federating
            # or pushgateway-style scrape of kube-state-metrics/DCGM would.
            "    honor_labels: true\n"
            "    static_configs:\n"
            f"      - targets: ['127.0.0.1:{exporter_port}']\n"
            + "".join(
                f"  - job_name: {job}\n"
                "    static_configs:\n"
                f"      - targets: ['{target}']\n"
                for job, target in self.extra_targets.items()
            )
        )
        args = [f"--config.file={cfg}"]
        if self.basic_auth is not None:
            import bcrypt

            user, password = self.basic_auth
            hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()
            web = self.tmpdir / "web.yml"
            web.write_text(f"basic_auth_users:\n  {user}: {json.dumps(hashed)}\n")
            args.append(f"--web.config.file={web}")
        return args

    def start(self) -> PrometheusServer:
        if not os.access(PROMETHEUS_BIN, os.X_OK):
            raise ComponentUnavailable(f"{PROMETHEUS_BIN} not found (apt-get install prometheus)")
        self.tmpdir = Path(tempfile.mkdtemp(prefix="quotatop-prom-"))
        try:
            exporter_port = self.exporter.start()
            args = self._write_config(exporter_port)
            self.port = free_port()
            log = (self.tmpdir / "prometheus.log").open("wb")
            self.proc = subprocess.Popen(
                [
                    PROMETHEUS_BIN,
                    *args,
                    f"--storage.tsdb.path={self.tmpdir / 'data'}",
                    f"--web.listen-address=127.0.0.1:{self.port}",
                    "--log.level=warn",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
            log.close()
            self.started_at = time.time()
            self._wait_first_scrape()
        except BaseException:
            self.stop()
            raise
        return self

    def _headers(self) -> dict[str, str]:
        if self.basic_auth is None:
            return {}
        token = base64.b64encode(f"{self.basic_auth[0]}:{self.basic_auth[1]}".encode()).decode()
        return {"Authorization": f"Basic {token}"}

    def query(self, promql: str) -> list[dict[str, object]]:
        url = f"{self.url}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        req = urllib.request.Request(url, headers=self._headers())
        with urllib.request.urlopen(req, timeout=5) as resp:
            return list(json.load(resp)["data"]["result"])

    def _wait_first_scrape(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        last = "no answer yet"
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise ComponentUnavailable(
                    f"prometheus exited with {self.proc.returncode}: {self.log_tail()}"
                )
            try:
                # Two scrapes in, so rate() over the node counters has data too.
                res = self.query('count_over_time(up{job="team-exporter"}[1m])')
                if res and float(res[0]["value"][1]) >= 2:  # type: ignore[index]
                    self.first_scrape_at = time.time()
                    return
                last = "target not scraped yet"
            except (OSError, urllib.error.URLError, ValueError, KeyError) as exc:
                last = str(exc)
            time.sleep(0.2)
        raise ComponentUnavailable(
            f"prometheus had no scrape within {self.start_timeout:.0f}s: {last}"
        )

    def log_tail(self, n: int = 5) -> str:
        if self.tmpdir is None:
            return ""
        path = self.tmpdir / "prometheus.log"
        if not path.exists():
            return ""
        return " | ".join(path.read_text(errors="replace").strip().splitlines()[-n:])

    def stop(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=5)
            self.proc = None
        self.exporter.stop()
        if self.tmpdir is not None:
            shutil.rmtree(self.tmpdir, ignore_errors=True)
            self.tmpdir = None

    def __enter__(self) -> PrometheusServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
