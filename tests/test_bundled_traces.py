"""The real NASA Ames iPSC/860 log shipped in demo_data/traces/: unchanged, packaged,
played by name, and its metrics under fifo and easy (figures also in the README there,
cross-checked against the peer simulator AccaSim, which starts every job at the same time)."""

from __future__ import annotations

import glob
import hashlib
import json
import tomllib
from fnmatch import fnmatch
from pathlib import Path

import pytest

from quotatop import collectors
from quotatop.cli import main
from quotatop.collectors.human import human_duration
from quotatop.simulation.trace_simulate import (
    TRACE_DIR,
    bundled_traces,
    cluster_shape,
    resolve_trace,
)
from quotatop.simulation.traces.swf import load_swf
from quotatop.sources import DEMO_DATA

ROOT = Path(__file__).resolve().parent.parent
NASA = TRACE_DIR / "NASA-iPSC-1993-3.1-cln.swf"
SHA256 = "9d997a2c20a7f7b0b6d81638d756ce8b2c524c4f2e9ec78da36001743ca33d76"


def test_the_shipped_log_is_the_archives_file_unchanged() -> None:
    data = NASA.read_bytes()
    assert len(data) == 1_678_956
    assert hashlib.sha256(data).hexdigest() == SHA256
    readme = (TRACE_DIR / "README.md").read_text()
    assert SHA256 in readme and "Parallel Workloads Archive" in readme
    assert "doi:10.1016/j.jpdc.2014.06.013" in readme and "LNCS 949" in readme


def test_demo_data_is_found_beside_the_packages_and_packaged_by_maturin() -> None:
    # DEMO_DATA is <dir holding the rooms>/demo_data: the repo root here (the rooms' links
    # resolved), the package quotatop/ in a wheel, where maturin's `include` puts
    # demo_data/ beside collectors/ (through the link quotatop/demo_data).
    assert Path(collectors.__file__).resolve().parent.parent / "demo_data" == DEMO_DATA
    assert TRACE_DIR == DEMO_DATA / "traces" and NASA.is_file()
    maturin = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["maturin"]
    wanted = {"quotatop/demo_data/traces/NASA-iPSC-1993-3.1-cln.swf",
              "quotatop/demo_data/traces/README.md"}
    included = {f for pattern in maturin["include"]
                for f in glob.glob(pattern, root_dir=ROOT, recursive=True)}
    assert wanted <= included
    excluded = [x if isinstance(x, str) else x["path"] for x in maturin.get("exclude", [])]
    assert not any(fnmatch(f, x) for f in wanted for x in excluded)


def test_bundled_names_resolve_to_the_file() -> None:
    assert bundled_traces() == [NASA]
    for name in ("nasa-ipsc", "NASA-iPSC-1993-3.1-cln", "nasa"):
        assert resolve_trace(name, None) == (str(NASA), "swf")
    assert resolve_trace("scenario.toml", None) is None  # a scenario, as before


def test_unknown_name_is_one_line_naming_the_bundled_traces(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "no-such-trace"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "NASA-iPSC-1993-3.1-cln.swf" in err


def test_known_fields_of_the_log() -> None:
    t = load_swf(NASA)
    assert len(t.jobs) == 18_239 and t.skipped == 0 and t.unknown_runtime == 0
    assert cluster_shape(t) == (128, 1.0)  # MaxNodes 128 from the header, MaxProcs 128
    assert sorted({j.team for j in t.jobs}) == ["g1", "g2"]
    assert len({j.user for j in t.jobs}) == 69
    assert all(j.recorded_start is None and j.time_limit is None for j in t.jobs)
    assert t.missing == ["wait time (field 3)", "requested processors (field 8)",
                         "requested time (field 9)"]


# Derived once from a run and cross-checked with the figures of the shared README.
FIGURES = {"fifo": (8.004660343220571, 1.0259845663033527),
           "easy": (4.028071714458029, 1.011759401740619)}


@pytest.mark.parametrize("policy", ["fifo", "easy"])
def test_metrics_of_a_run_by_name(policy: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "nasa-ipsc", "--policy", policy, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    mean_wait, bsld = FIGURES[policy]
    assert (out["jobs"], out["started"], out["rejected"]) == (18_239, 18_239, 0)
    assert (out["nodes"], out["per_node"], out["teams"]) == (128, 1.0, 2)
    assert out["mean_wait"] == pytest.approx(mean_wait)
    assert out["median_wait"] == 0.0
    assert out["mean_bounded_slowdown"] == pytest.approx(bsld)
    assert out["utilization"] == pytest.approx(0.4660931234292093)
    assert out["jain_index_teams"] == pytest.approx(0.5156646127986292)
    assert out["makespan"] == 7_949_022.0
    assert out["events"] == 54_717 and out["events_per_s"] > 0 and out["wall_s"] > 0
    assert main(["simulate", "nasa-ipsc", "--policy", policy]) == 0
    text = capsys.readouterr().out
    # The text for people in the one human format (collectors/human.py): 7,949,022 s is
    # 92 days.
    assert f"mean wait {human_duration(mean_wait)}, median wait 0s" in text
    assert "utilization 46.6%, Jain's index over teams 0.516, makespan 92d" in text
    assert "54,717 events" in text and "events/s" in text
    assert ("fields not in this trace: wait time (field 3); requested processors (field 8); "
            "requested time (field 9)") in text


def test_compare_recorded_on_the_log_says_there_are_no_waits(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "nasa-ipsc", "--compare-recorded"]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err.count("\n") == 1
    assert "no recorded waits" in out.err and "field 3 is -1 on every job line" in out.err


def test_help_names_the_bundled_trace(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    out = "".join(capsys.readouterr().out.split())  # argparse wraps at hyphens
    assert "nasa-ipsc" in out and "NASA-iPSC-1993-3.1-cln.swf" in out
    assert "--columns" in out and "--nodes-file" in out and "--compare-recorded" in out
