"""`quotatop predict`: one named row per pending job, with the site's own policy.

The snapshots are made up here, small enough that each expected start is worked out
by hand in the comments."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from quotatop.cli import main
from quotatop.collectors.model import Job, Node, Partition, SchedulerConfig, Snapshot, Team
from quotatop.commands.predict import CSV_FIELDS
from quotatop.recording.store import Recorder

T = 1_800_000_000.0


def _snapshot(scheduler: SchedulerConfig | None, estimate: float | None = None) -> Snapshot:
    nodes = [Node(name=n, partitions=["gpu"], state="mixed",
                  capacity={"cpu": 8, "memory": 1000, "gpu": 8}) for n in ("n1", "n2")]
    nodes[0].allocated = {"cpu": 1, "memory": 10, "gpu": 8}
    running = Job(id="1", user="u", team="t", state="running", partition="gpu",
                  request={"cpu": 1, "memory": 10, "gpu": 8}, time_limit=100.0,
                  submit_time=T - 20, start_time=T - 10, nodes=["n1"],
                  runtime_estimate=estimate, runtime_basis="mean of u's last 2 runs"
                  if estimate else None)
    a = Job(id="2", user="u", team="t", partition="gpu", request={"cpu": 1, "memory": 10,
            "gpu": 8}, time_limit=300.0, submit_time=T - 5, priority=200.0)
    b = Job(id="3", user="v", team="t", partition="gpu", request={"cpu": 1, "memory": 10,
            "gpu": 8}, time_limit=300.0, submit_time=T - 4, priority=100.0,
            runtime_estimate=30.0, runtime_basis="mean of v's last 2 runs", estimated_start=T + 90)
    return Snapshot(source="test", cluster="c", taken_at=T, nodes=nodes,
                    partitions=[Partition(name="gpu", nodes=["n1", "n2"])],
                    teams=[Team(name="t")], jobs=[running, a, b], scheduler=scheduler)


def _record(path: Path, snap: Snapshot) -> Path:
    with Recorder(path, source="test") as rec:
        rec.append(snap)
    return path


SITE = SchedulerConfig(priority="multifactor", weights={"age": 1000, "fairshare": 10000},
                       backfill="conservative", bf_interval=2, bf_resolution=60,
                       bf_window=86400, preemption="off")


def _predict(tmp_path: Path, capsys: pytest.CaptureFixture[str], snap: Snapshot,
             *flags: str) -> dict:
    rec = _record(tmp_path / "r.qtr", snap)
    assert main(["predict", "--source", "replay", str(rec), "--json", *flags]) == 0
    return json.loads(capsys.readouterr().out)


def test_rows_are_named_and_follow_the_sites_scheduler(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _predict(tmp_path, capsys, _snapshot(SITE))
    assert out["version"] == 1 and out["taken_at"] == T and out["cluster"] == "c"
    rows = {r["job_id"]: r for r in out["jobs"]}
    assert [r["job_id"] for r in out["jobs"]] == ["2", "3"]  # the source's priority order
    # Job 2 fits on the idle n2 now.
    assert rows["2"]["state"] == "starts_now" and rows["2"]["predicted_start"] == T
    assert rows["2"]["predicted_nodes"] == ["n2"]
    # Job 3 starts when job 1 ends at its limit, T-10+100 = T+90: at that event, not
    # on a 60 s grid (which would say T+120).
    assert rows["3"]["predicted_start"] == pytest.approx(T + 90)
    assert rows["3"]["predicted_nodes"] == ["n1"]
    assert rows["3"]["predicted_start_iso"].endswith("Z")
    assert rows["3"]["scheduler_estimate"] == T + 90
    assert rows["3"]["runtime"] == pytest.approx(30.0)
    assert rows["3"]["runtime_basis"].startswith("estimate")
    assert rows["3"]["source_priority"] == 100.0
    assert set(rows["3"]["factors"]) == {"age", "fairshare", "qos", "job_size", "partition"}
    assert out["policy"]["passes"] == "events" and out["policy"]["preemption"] is False


def test_runtime_estimates_move_starts_and_limit_mode_ignores_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Job 1 is expected to run 40 s in all (started at T-10): it ends at T+30.
    snap = _snapshot(SITE, estimate=40.0)
    rows = {r["job_id"]: r for r in _predict(tmp_path, capsys, snap)["jobs"]}
    assert rows["3"]["predicted_start"] == pytest.approx(T + 30)
    (tmp_path / "r.qtr").unlink()
    rows = {r["job_id"]: r for r in _predict(tmp_path, capsys, snap, "--runtimes", "limit")
            ["jobs"]}
    assert rows["3"]["predicted_start"] == pytest.approx(T + 90)
    assert rows["3"]["runtime_basis"] == "time limit"
    assert rows["3"]["runtime"] == pytest.approx(300.0)


def test_windows_come_from_the_running_jobs_history(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Job 1 (started at T-10) ran 30, 40 and 50 s before: job 3 waits for it, so its
    # window lies about T+20..T+40; job 2 starts now, and its window is that instant.
    snap = _snapshot(SITE, estimate=40.0)
    snap.jobs[0].runtime_history = [30.0, 40.0, 50.0]
    rows = {r["job_id"]: r for r in _predict(tmp_path, capsys, snap)["jobs"]}
    assert rows["2"]["predicted_start_p10"] == rows["2"]["predicted_start_p90"] == T
    lo, mid, hi = (rows["3"][f"predicted_start_p{q}"] for q in (10, 50, 90))
    assert T + 10 < lo < mid < hi < T + 60
    assert lo <= rows["3"]["predicted_start"] <= hi
    for flags in (["--samples", "0"], ["--runtimes", "limit"]):
        (tmp_path / "r.qtr").unlink()
        rows = {r["job_id"]: r for r in _predict(tmp_path, capsys, snap, *flags)["jobs"]}
        assert rows["3"]["predicted_start_p10"] is None, flags


def test_csv_has_the_documented_header(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    rec = _record(tmp_path / "r.qtr", _snapshot(SITE))
    assert main(["predict", "--source", "replay", str(rec), "--csv"]) == 0
    table = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert table[0] == CSV_FIELDS and len(table) == 3
    doc = (Path(__file__).resolve().parents[1] / "docs" / "predict.md").read_text()
    for name in CSV_FIELDS:
        assert f"`{name}`" in doc, f"docs/predict.md does not describe {name}"


@pytest.mark.parametrize("flags, words", [
    (["--source", "slurm", "--at", "03:12"], "--at applies"),
    (["--source", "demo", "--at", "soon"], "--at 'soon'"),
    (["--source", "demo", "--horizon", "nan"], "--horizon"),
    (["--source", "slurm", "x"], "takes no file"),
    (["--source", "replay"], "needs a file"),
    (["--source", "demo", "--samples", "-1"], "--samples"),
])
def test_bad_flags_are_one_line(flags: list[str], words: str,
                                capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(["predict", *flags])
    except SystemExit as e:  # the parser's own refusal of a flag's value
        code = e.code
    assert code == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1


def test_a_scenario_predicts_with_the_core_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    scenario = Path(__file__).resolve().parents[1] / "demo_data" / "fragmentation.toml"
    assert main(["predict", "--source", "demo", str(scenario), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["policy"]["passes"] == "grid"  # no site config: the core's defaults
    assert len(out["jobs"]) == 2 and all(r["reason"] for r in out["jobs"])


def test_the_demo_tour_is_a_timeline_at_picks_its_frame(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The tour opens on an idle cluster: predict says where the queue is (on stderr,
    --json stays one document), and --at picks a frame with one (29 jobs 10 minutes in)."""
    assert main(["predict", "--source", "demo", "--json"]) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out)["jobs"] == []
    assert "no pending jobs at " in cap.err and "--at HH:MM or +DURATION" in cap.err
    assert cap.err.count("\n") == 1
    assert main(["predict", "--source", "demo", "--at", "+10m", "--json"]) == 0
    cap = capsys.readouterr()
    out = json.loads(cap.out)
    assert out["taken_at_iso"] == "2026-01-05T09:10:00Z" and len(out["jobs"]) == 29
    assert cap.err == ""


def test_replay_json_names_every_prediction_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rec = _record(tmp_path / "r.qtr", _snapshot(SITE))
    assert main(["replay", str(rec), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["predictions"]
    assert [r["job_id"] for r in rows] == ["2", "3"]
    assert all(set(r) == set(CSV_FIELDS) for r in rows)


def test_the_table_and_the_reason_write_a_wait_alike(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue #32: the table said 'in 1500s' while the reason said 'in 25m'. A job not
    eligible before T+1500 on an idle node starts then: both read 'in 25m'."""
    node = Node(name="n1", partitions=["gpu"], state="idle",
                capacity={"cpu": 8, "memory": 1000, "gpu": 8})
    job = Job(id="7", user="u", team="t", partition="gpu", request={"gpu": 8},
              time_limit=300.0, submit_time=T - 5, eligible_time=T + 1500)
    snap = Snapshot(source="test", cluster="c", taken_at=T, nodes=[node],
                    partitions=[Partition(name="gpu", nodes=["n1"])], teams=[Team(name="t")],
                    jobs=[job])
    rec = _record(tmp_path / "r.qtr", snap)
    assert main(["predict", "--source", "replay", str(rec), "--json"]) == 0
    row, = json.loads(capsys.readouterr().out)["jobs"]
    assert row["predicted_wait"] == 1500  # the JSON keeps seconds
    assert main(["predict", "--source", "replay", str(rec)]) == 0
    line, = [ln for ln in capsys.readouterr().out.splitlines() if ln.strip().startswith("7 ")]
    assert " in 25m " in line and "(in 25m)" in line, line


@pytest.mark.parametrize("form", [[], ["--json"], ["--csv"]])
def test_what_the_source_refused_is_said_on_stderr(
        form: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A prediction made without a refused record says so (issue #35): the snapshot's
    warnings, escaped, on stderr, with stdout still one document."""
    import msgspec

    warned = msgspec.structs.replace(
        _snapshot(SITE), warnings=["squeue: skipped 1 record(s): job 1601: node count "
                                   "1e+09 above 1000000 \x1b[31m"])
    rec = _record(tmp_path / "w.qtr", warned)
    assert main(["predict", "--source", "replay", str(rec), *form]) == 0
    got = capsys.readouterr()
    assert got.err.splitlines() == [
        "quotatop: warning: squeue: skipped 1 record(s): job 1601: node count 1e+09 above "
        "1000000 \\x1b[31m"]
    if form == ["--json"]:
        json.loads(got.out)  # stdout is still the one JSON document
