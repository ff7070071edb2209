"""The core's opt-in fidelity rules, each on a small hand-built snapshot whose
answer is derived by hand in the test's docstring: scoped limits, node features
and exclusive jobs, event-driven and main passes, the source's priorities,
runtime estimates, the new Prediction fields and configured preemption."""

from __future__ import annotations

from quotatop import scheduler_core
from quotatop.collectors.model import Job, Limit, Node, Partition, QoS, Snapshot, Team
from quotatop.scheduler_core import Policy, PriorityWeights

NOW = 1_000_000.0
# Age only, over a long max_age: the queue is in submit order, no fair share.
AGE = PriorityWeights(age=1000, fairshare=0, qos=0, job_size=0, partition=0)


def nodes(n: int = 2, gpus: float = 8.0, **kw: object) -> list[Node]:
    return [Node(name=f"n{i}", capacity={"cpu": 64.0, "memory": 512000.0, "gpu": gpus},
                 **kw) for i in range(n)]  # type: ignore[arg-type]


def run(jobs: list[Job], *, node_list: list[Node] | None = None, limits: list[Limit] = (),
        teams: list[Team] = (), qos: list[QoS] = (), partitions: list[Partition] = (),
        **policy: object) -> dict[str, scheduler_core.Prediction]:
    snap = Snapshot(taken_at=NOW, nodes=node_list or nodes(), jobs=jobs, limits=list(limits),
                    teams=list(teams), qos=list(qos), partitions=list(partitions))
    settings: dict[str, object] = {"bf_resolution": 1.0, "weights": AGE}
    settings.update(policy)
    pol = Policy(**settings)  # type: ignore[arg-type]
    return {p.job_id: p for p in scheduler_core.predict(snap, pol, 86400)}


def running(id: str, gpu: float, node: str = "n0", *, ends: float = 1000.0, **kw: object) -> Job:
    """A job that started 100 s ago and reaches its time limit at NOW + ends."""
    return Job(id=id, state="running", request={"gpu": gpu}, nodes=[node],
               start_time=NOW - 100, time_limit=ends + 100, **kw)  # type: ignore[arg-type]


def pending(id: str, gpu: float, *, age: float = 100.0, limit: float = 600.0,
            **kw: object) -> Job:
    return Job(id=id, request={"gpu": gpu}, submit_time=NOW - age, time_limit=limit,
               **kw)  # type: ignore[arg-type]


# ---------------------------------------------------------------- 1. scoped limits

def test_qos_group_limit_holds_a_job_until_the_group_frees_and_blocks_no_one() -> None:
    """QoS high GrpTRES gpu=8, 8 held by r (ends at +1000). p (high, first in the
    queue) asks 8: held until r ends. q (normal, behind p) starts now on n1: a held
    job blocks nobody."""
    got = run([running("r", 8, qos="high"), pending("p", 8, qos="high", age=200),
               pending("q", 8, qos="normal", age=100)],
              limits=[Limit(scope="qos", owner="high", tres={"gpu": 8})])
    p, q = got["p"], got["q"]
    assert p.reason.startswith("held: QoS high's GrpTRES gpu=8 (group holds 8, asks 8)")
    assert p.binding == "QoS high GrpTRES gpu"
    assert p.state == "planned" and p.start == NOW + 1000
    assert q.state == "starts_now" and q.nodes == ["n1"] and q.binding == ""


def test_an_account_group_limit_counts_its_sub_accounts() -> None:
    """Account phys (parent of phys-a and phys-b) GrpTRES gpu=8: phys-a's running 8
    GPUs hold phys-b's job too."""
    teams = [Team(name="phys"), Team(name="phys-a", parent="phys"),
             Team(name="phys-b", parent="phys")]
    got = run([running("r", 8, team="phys-a"), pending("p", 4, team="phys-b")], teams=teams,
              limits=[Limit(scope="account", owner="phys", tres={"gpu": 8}, rank=3)])
    assert got["p"].reason.startswith("held: account phys's GrpTRES gpu=8 (group holds 8, asks 4)")
    assert got["p"].start == NOW + 1000


def test_a_qos_group_limit_overrides_the_account_group_limit_on_the_same_resource() -> None:
    """QoS normal GrpTRES gpu=16 sets gpu, so account phys's GrpTRES gpu=8 is not
    checked for the job (8 held + 4 asked <= 16): it starts now. Without the QoS
    limit the account's holds it."""
    jobs = [running("r", 8, team="phys"), pending("p", 4, team="phys")]
    acct = Limit(scope="account", owner="phys", tres={"gpu": 8}, rank=3)
    qos = Limit(scope="qos", owner="normal", tres={"gpu": 16}, rank=1)
    assert run(jobs, limits=[acct, qos])["p"].state == "starts_now"
    assert run(jobs, limits=[acct])["p"].state == "planned"


def test_per_user_limit_holds_one_user_not_another() -> None:
    lim = Limit(scope="qos", owner="normal", per="user", tres={"gpu": 8}, rank=1)
    got = run([running("r", 8, user="bob"), pending("b", 4, user="bob", age=200),
               pending("a", 4, user="alice", age=100)], limits=[lim])
    assert got["b"].reason.startswith(
        "held: user bob holds 8 of QoS normal's MaxTRESPerUser gpu=8 (asks 4)")
    assert got["b"].binding == "QoS normal MaxTRESPerUser gpu"
    assert got["a"].state == "starts_now"


def test_per_job_limit_rejects_and_wall_limit_holds_for_good() -> None:
    limits = [Limit(scope="qos", owner="high", per="job", tres={"gpu": 8}),
              Limit(scope="qos", owner="low", wall=3600)]
    got = run([pending("big", 16, qos="high"), pending("long", 1, qos="low", limit=7200)],
              limits=limits, node_list=nodes(1, gpus=32))
    assert got["big"].state == "rejected"
    assert got["big"].reason == "rejected: asks 16 GPUs over QoS high's MaxTRESPerJob of 8"
    assert got["big"].binding == "QoS high MaxTRESPerJob gpu"
    assert got["long"].state == "held" and got["long"].start is None
    assert got["long"].reason == "held: time limit 7200s over QoS low's MaxWall of 3600s"
    assert got["long"].binding == "QoS low MaxWall"


def test_lowest_rank_wins_between_partition_qos_and_job_qos() -> None:
    """Partition gpu's per-user gpu=4 (rank 0) against QoS normal's gpu=16 (rank 1):
    the user holds 4, so the partition's holds the job; ranked the other way
    round (OverPartQOS) the QoS's 16 lets it start."""
    part = [Partition(name="gpu", nodes=["n0", "n1"])]
    jobs = [running("r", 4, user="u", partition="gpu"), pending("p", 4, user="u", partition="gpu")]

    def limits(prank: int, qrank: int) -> list[Limit]:
        return [Limit(scope="partition", owner="gpu", per="user", tres={"gpu": 4}, rank=prank),
                Limit(scope="qos", owner="normal", per="user", tres={"gpu": 16}, rank=qrank)]
    held = run(jobs, partitions=part, limits=limits(0, 1))["p"]
    assert held.binding == "partition gpu MaxTRESPerUser gpu"
    assert run(jobs, partitions=part, limits=limits(1, 0))["p"].state == "starts_now"


def test_typed_gpu_limit_counts_only_jobs_of_that_type() -> None:
    typed = [Node(name="h", capacity={"gpu": 8.0, "gpu:h100": 8.0}, gpu_type="h100"),
             Node(name="a", capacity={"gpu": 8.0, "gpu:a100": 8.0}, gpu_type="a100"),
             Node(name="h2", capacity={"gpu": 8.0, "gpu:h100": 8.0}, gpu_type="h100")]
    lim = Limit(scope="qos", owner="normal", tres={"gpu:h100": 8})
    got = run([Job(id="r", state="running", request={"gpu:h100": 8}, nodes=["h"],
                   start_time=NOW - 100, time_limit=1100),
               Job(id="ph", request={"gpu:h100": 8}, submit_time=NOW - 200, time_limit=60),
               Job(id="pa", request={"gpu:a100": 8}, submit_time=NOW - 100, time_limit=60)],
              node_list=typed, limits=[lim])
    assert got["ph"].binding == "QoS normal GrpTRES gpu:h100" and got["ph"].start == NOW + 1000
    assert got["pa"].state == "starts_now"


def test_running_jobs_limit_and_submit_limit_of_existing_jobs() -> None:
    """MaxJobsPerUser=1: bob's second job waits for his first to end (+1000). A
    MaxSubmitJobsPerUser=1 already exceeded at the snapshot drops no job."""
    limits = [Limit(scope="qos", owner="normal", per="user", jobs=1, submit=1)]
    got = run([running("r", 1, user="bob"), pending("p", 1, user="bob")], limits=limits)
    assert got["p"].reason.startswith(
        "held: user bob runs 1 jobs, QoS normal's MaxJobsPerUser is 1")
    assert got["p"].state == "planned" and got["p"].start == NOW + 1000


def test_with_a_limit_list_the_old_qos_fields_do_not_hold() -> None:
    """QoS normal's max_tres_per_user=4 would hold u's job (4 held + 4); with a
    limit list present, the list is the authority and sets none for gpu here."""
    qos = [QoS(name="normal", max_tres_per_user={"gpu": 4})]
    jobs = [running("r", 4, user="u"), pending("p", 4, user="u")]
    assert run(jobs, qos=qos)["p"].state == "planned"
    assert run(jobs, qos=qos, limits=[Limit(scope="qos", owner="other", jobs=1)])["p"].state \
        == "starts_now"


# ------------------------------------------------------ 2. features and exclusive

def test_constraint_picks_the_nodes_with_the_features() -> None:
    ns = [Node(name="n0", capacity={"gpu": 8.0}, features=["a100"]),
          Node(name="n1", capacity={"gpu": 8.0}, features=["h100", "ib"])]
    got = run([pending("hi", 1, constraint="h100&ib", age=300),
               pending("either", 1, constraint="[v100|a100]", age=200),
               pending("none", 1, constraint="v100", age=100)], node_list=ns)
    assert got["hi"].nodes == ["n1"]
    assert got["either"].nodes == ["n0"]
    assert got["none"].state == "rejected" and "constraint v100" in got["none"].reason


def test_a_partition_job_uses_only_its_partitions_nodes() -> None:
    """n0 is idle but outside partition p; p's n1 is full until +1000."""
    got = run([running("r", 8, node="n1"), pending("p", 4, partition="p")],
              partitions=[Partition(name="p", nodes=["n1"])])
    assert got["p"].start == NOW + 1000 and got["p"].nodes == ["n1"]


def test_an_exclusive_job_takes_a_whole_idle_node() -> None:
    """n0 runs a 1-GPU job. Best fit would put a 1-GPU job on n0; the exclusive
    one takes idle n1 whole, so the next 1-GPU job goes to n0, and a third to
    n0 as well (n1 is not shared)."""
    got = run([running("r", 1), pending("x", 1, exclusive=True, age=300),
               pending("y", 1, age=200), pending("z", 1, age=100)])
    assert got["x"].nodes == ["n1"]
    assert got["y"].nodes == ["n0"] and got["z"].nodes == ["n0"]


# -------------------------------------------------------------- 3. time model

def test_event_passes_start_at_the_exact_end_not_on_the_grid() -> None:
    """r ends at +90; with a 60 s grid the next pass is at +120, with event passes +90."""
    jobs = [running("r", 8, ends=90), running("r1", 8, node="n1", ends=5000), pending("p", 8)]
    assert run(jobs, bf_resolution=60.0)["p"].start == NOW + 120
    assert run(jobs, bf_resolution=60.0, passes="events")["p"].start == NOW + 90


def test_main_pass_takes_a_blocked_partitions_nodes_out_for_every_partition() -> None:
    """Slurm's main scheduler, once a job finds no room, takes its partition's nodes
    out for the rest of the pass (job_scheduler.c), so no lower-priority job of any
    partition starts on them ahead of it. n0 is in big, tiny and small; n1 in small
    only; r holds 4 GPUs of n0 until +1000, r1 4 of n1 until +9000. A (big, first)
    needs 8: blocked, n0 out. E (tiny = n0) and D (big) wait, though 4 GPUs of n0
    are free: starting them would push A back to +5000. C (small) starts now on n1,
    the only node left to it (best fit alone would take n0, the first of two equal
    nodes). Without the main pass, backfill reaches the same, by A's reservation."""
    parts = [Partition(name="big", nodes=["n0"]), Partition(name="tiny", nodes=["n0"]),
             Partition(name="small", nodes=["n0", "n1"])]
    jobs = [running("r", 4), running("r1", 4, node="n1", ends=9000),
            pending("A", 8, partition="big", age=400),
            pending("E", 4, partition="tiny", age=300, limit=5000),
            pending("C", 4, partition="small", age=200, limit=5000),
            pending("D", 4, partition="big", age=100, limit=5000)]
    for main_pass in (True, False):
        got = run(jobs, partitions=parts, main_pass=main_pass)
        assert got["C"].state == "starts_now" and got["C"].nodes == ["n1"], main_pass
        assert got["E"].state == "planned" and got["D"].state == "planned", main_pass
        assert got["A"].start == NOW + 1000, main_pass


def test_main_pass_starts_a_job_of_a_partition_apart_from_the_blocked_one() -> None:
    """The main pass goes on past a blocked job: with big (n0) blocked, a job of
    partition other (n1) starts at once on n1, in the same pass."""
    parts = [Partition(name="big", nodes=["n0"]), Partition(name="other", nodes=["n1"])]
    jobs = [running("r", 4), pending("A", 8, partition="big", age=300),
            pending("B", 8, partition="other", age=200)]
    got = run(jobs, partitions=parts, main_pass=True)
    assert got["A"].state == "planned" and got["A"].start == NOW + 1000
    assert got["B"].state == "starts_now" and got["B"].nodes == ["n1"]


def test_a_pass_delay_sees_ends_a_moment_apart_together() -> None:
    """r0 frees n0 at +100; rq, QoS high's only job, ends at +100.5 and so lets A
    (high, first in the queue) past QoS high's GrpTRES gpu=8. n1 keeps 4 GPUs busy
    until +5000. Answered at each end, B (second) takes n0 at +100 before A is
    free, and A waits for B's end (+700). With a 1 s delay the pass at +101 sees both
    ends and starts A first; B follows a moment after A's end, +702."""
    jobs = [running("r0", 8, ends=100), running("rq", 4, node="n1", ends=100.5, qos="high"),
            running("r1", 4, node="n1", ends=5000),
            pending("A", 8, qos="high", age=300), pending("B", 8, age=200)]
    limits = [Limit(scope="qos", owner="high", tres={"gpu": 8})]
    now = run(jobs, limits=limits, passes="events")
    assert now["B"].start == NOW + 100 and now["A"].start == NOW + 700
    later = run(jobs, limits=limits, passes="events", pass_delay=1.0)
    assert later["A"].start == NOW + 101 and later["B"].start == NOW + 702


# --------------------------------------------------------------- 4. priorities

def test_source_priority_orders_the_queue_and_its_factors_are_shown() -> None:
    from quotatop.collectors.model import PriorityFactors
    jobs = [running("r", 8, node="n0", ends=100), running("r1", 8, node="n1", ends=9000),
            pending("x", 8, age=100, priority=100.0,
                    factors=PriorityFactors(age=1.0, fairshare=99.0)),
            pending("y", 8, age=50, priority=200.0)]
    computed = run(jobs)
    assert list(computed) == ["x", "y"] and computed["x"].start == NOW + 100
    source = run(jobs, priority="source")
    assert list(source) == ["y", "x"] and source["y"].start == NOW + 100
    assert source["x"].priority == 100.0
    assert (source["x"].factors.age, source["x"].factors.fairshare) == (1.0, 99.0)


def test_with_source_priorities_an_aging_job_overtakes_a_saturated_one() -> None:
    """max_age 1000 s, age weight 1000 (1 point a second). x (505) is saturated,
    y (500) has just become eligible: at the snapshot x is first and reserved for
    +100, but by then y has 600 and starts first; x follows at +150."""
    jobs = [running("r", 8, ends=100),
            Job(id="x", request={"gpu": 8}, submit_time=NOW - 5000, time_limit=50, priority=505),
            Job(id="y", request={"gpu": 8}, submit_time=NOW, time_limit=50, priority=500)]
    got = run(jobs, node_list=nodes(1), priority="source", max_age=1000.0)
    assert list(got) == ["x", "y"]
    assert got["y"].start == NOW + 100 and got["x"].start == NOW + 150


# ----------------------------------------------------------------- 5. runtimes

def test_a_running_jobs_estimate_decides_when_its_node_frees() -> None:
    """r started 100 s ago, limit end +3500, estimate 600 s: ends at +500."""
    est = running("r", 8, ends=3500, runtime_estimate=600.0)
    jobs = [est, running("r1", 8, node="n1", ends=9000), pending("p", 8)]
    assert run(jobs)["p"].start == NOW + 500
    assert run(jobs, runtimes="limit")["p"].start == NOW + 3500


def test_a_job_past_its_estimate_ends_soon_but_not_after_its_limit() -> None:
    """Estimate 50 s, already 100 s in: ends at now + max(5, 10% of 50) = +5."""
    jobs = [running("r", 8, ends=3500, runtime_estimate=50.0),
            running("r1", 8, node="n1", ends=9000), pending("p", 8)]
    assert run(jobs)["p"].start == NOW + 5


def test_backfill_still_plans_with_time_limits() -> None:
    """r (4 GPUs) has limit end +3500 and estimate end +500. A (8 GPUs, first) is
    reserved at +3500, the limit end; so B (4 GPUs, 2000 s) fits before it and starts
    now. r ends at +500, B at +2000: A starts at +2000."""
    jobs = [running("r", 4, ends=3500, runtime_estimate=600.0), pending("A", 8, age=300),
            pending("B", 4, age=100, limit=2000)]
    got = run(jobs, node_list=nodes(1))
    assert got["B"].state == "starts_now"
    assert got["A"].start == NOW + 2000


def test_prediction_rows_carry_runtime_and_its_basis() -> None:
    got = run([pending("e", 1, limit=3600, runtime_estimate=900.0,
                       runtime_basis="median of user's last 10 jobs"),
               pending("l", 1, limit=3600)])
    assert got["e"].runtime == 900.0 and got["e"].end == NOW + 900
    assert got["e"].runtime_basis == "estimate: median of user's last 10 jobs"
    assert got["l"].runtime == 3600.0 and got["l"].runtime_basis == "time limit"
    assert run([pending("e", 1, runtime_estimate=900.0)], runtimes="limit")["e"].runtime == 600


def test_binding_names_the_resource_or_the_reservation() -> None:
    """n0 full until +1000; A (8) waits for nodes; B (8, 5000 s) would delay A's
    reservation."""
    got = run([running("r", 8, ends=1000), pending("A", 8, age=300),
               pending("B", 8, age=100, limit=5000)], node_list=nodes(1))
    assert got["A"].binding == "nodes"
    assert got["B"].binding in ("reservation of job A", "nodes")


# --------------------------------------------------------------- 7. preemption

QOS = [QoS(name="low"), QoS(name="high", priority=10, preempts=["low"])]


def victim_and_preemptor(**low: object) -> list[Job]:
    return [Job(id="v", qos="low", state="running", request={"gpu": 8}, nodes=["n0"],
                start_time=NOW - 100, time_limit=10000),
            Job(id="hi", qos="high", request={"gpu": 8}, submit_time=NOW - 10, time_limit=60)]


def test_preemption_now_without_exempt_time_and_never_when_off() -> None:
    got = run(victim_and_preemptor(), node_list=nodes(1), qos=QOS)["hi"]
    assert got.state == "starts_now" and [p.job_id for p in got.preempts] == ["v"]
    off = run(victim_and_preemptor(), node_list=nodes(1), qos=QOS, preemption=False)["hi"]
    assert off.preempts == [] and off.start == NOW + 9900


def test_a_victim_younger_than_its_exempt_time_is_preempted_when_it_comes_of_age() -> None:
    """v started 100 s ago; exempt for 600 s: preempted at +500."""
    qos = [QoS(name="low", preempt_exempt_time=600), QOS[1]]
    got = run(victim_and_preemptor(), node_list=nodes(1), qos=qos)["hi"]
    assert got.start == NOW + 500 and [p.job_id for p in got.preempts] == ["v"]


def test_grace_time_delays_the_preemptor() -> None:
    qos = [QoS(name="low", grace_time=120), QOS[1]]
    got = run(victim_and_preemptor(), node_list=nodes(1), qos=qos)["hi"]
    assert got.start == NOW + 120 and [p.job_id for p in got.preempts] == ["v"]
    assert got.end == NOW + 180


def test_a_job_pending_before_its_begin_time_starts_then_and_says_why() -> None:
    """v was requeued just before the snapshot (Slurm set its begin time 90 s ahead,
    reason BeginTime): on an idle node it starts at +90, not now."""
    requeued = Job(id="v", qos="low", request={"gpu": 8}, submit_time=NOW - 500,
                   eligible_time=NOW + 90, time_limit=300)
    got = run([requeued], node_list=nodes(1), qos=QOS)["v"]
    assert got.state == "planned" and got.start == NOW + 90
    assert got.reason.startswith("not eligible before its begin time, ")
    assert got.binding == "begin time"


def test_a_job_before_its_begin_time_holds_no_one_back() -> None:
    """b (first in the queue, eligible at +300) would take n0's 8 GPUs; q behind it
    (8 GPUs, 600 s) starts now, and no reservation for b stops it though q runs past
    +300: the scheduler passes over a job before its begin time. b then starts when
    q ends, on n0 (the only node)."""
    got = run([pending("b", 8, age=500, eligible_time=NOW + 300),
               pending("q", 8, age=100)], node_list=nodes(1))
    assert got["q"].state == "starts_now"
    assert got["b"].start == NOW + 600 and got["b"].binding == "begin time"


def test_the_requeue_delay_holds_a_victim_until_then_in_the_horizon() -> None:
    """On one node: hi (high, 60 s) preempts v (low, 8 GPUs) now; w (low, 8 GPUs,
    queued behind v) is next after v. With a 120 s requeue delay, v cannot start at
    +60 when hi ends: w, eligible, starts then, and v after w's 100 s, at +160. With
    no delay v starts at +60 and w after it."""
    jobs = [*victim_and_preemptor(),
            Job(id="w", qos="low", request={"gpu": 8}, submit_time=NOW - 5, time_limit=100)]
    delayed = run(jobs, node_list=nodes(1), qos=QOS, requeue_delay=120.0)
    assert delayed["w"].start == NOW + 60
    at_once = run(jobs, node_list=nodes(1), qos=QOS)
    assert at_once["w"].start > NOW + 60


def test_an_arriving_job_over_a_submit_limit_is_rejected_in_simulate() -> None:
    """MaxSubmitJobsPerUser=1: bob's first job (600 s) is queued or running while
    his second arrives at +10, so the second is rejected; alice's is not."""
    from quotatop.scheduler_core import SimJob
    cluster = Snapshot(taken_at=NOW, nodes=nodes(1),
                       limits=[Limit(scope="qos", owner="normal", per="user", submit=1)])
    jobs = [SimJob(id="b1", submit_time=NOW, duration=600, request={"gpu": 1}, user="bob"),
            SimJob(id="b2", submit_time=NOW + 10, duration=600, request={"gpu": 1}, user="bob"),
            SimJob(id="a1", submit_time=NOW + 10, duration=600, request={"gpu": 1}, user="alice")]
    res = scheduler_core.simulate(jobs, Policy(bf_resolution=1.0), cluster=cluster)
    rejects = {e.job_id: e.detail for e in res.events if e.kind == "reject"}
    assert list(rejects) == ["b2"]
    assert rejects["b2"] == ("rejected: user bob has 1 jobs queued or running, "
                             "QoS normal's MaxSubmitJobsPerUser is 1")


# ---------------------------------------------------------------- 8. fair share over the horizon

def test_fair_tree_is_ranked_again_as_running_jobs_add_usage() -> None:
    """One account, users u (usage 10) and v (usage 12): u ranks first (factor 1, v 0.5),
    and the source's priorities say so (u's job 1500, v's 1000 with fairshare weight
    1000). u runs a 64-CPU job on n0 for the whole horizon; n1 is busy until +100, so
    both pending jobs wait. By the recalculation at +60, u has added 64 × 60 = 3840
    of usage: v ranks first and its job (now 1500) starts at +100 before u's (1000).
    Without the recalculation (fairshare_period 0) u's job goes first."""
    from quotatop.collectors.model import ShareNode

    jobs = [Job(id="ru", user="u", team="a", state="running", nodes=["n0"],
                request={"cpu": 64.0, "gpu": 8.0}, start_time=NOW - 10, time_limit=10_000),
            running("rv", 8, "n1", ends=100, user="v", team="a"),
            pending("pu", 8, user="u", team="a", priority=1500.0),
            pending("pv", 8, user="v", team="a", priority=1000.0)]
    shares = [ShareNode(account="a", raw_shares=1, raw_usage=22),
              ShareNode(account="a", user="u", raw_usage=10),
              ShareNode(account="a", user="v", raw_usage=12)]
    snap = Snapshot(taken_at=NOW, nodes=nodes(), jobs=jobs, teams=[Team(name="a")],
                    shares=shares)
    weights = PriorityWeights(age=0, fairshare=1000, qos=0, job_size=0, partition=0)

    def starts(period: float) -> dict[str, float | None]:
        pol = Policy(weights=weights, priority="source", fairshare="fair_tree",
                     fairshare_period=period, passes="events", bf_resolution=1.0)
        return {p.job_id: p.start for p in scheduler_core.predict(snap, pol, 86400)}

    assert starts(0.0)["pu"] == NOW + 100
    ranked_again = starts(60.0)
    assert ranked_again["pv"] == NOW + 100
    assert ranked_again["pu"] != NOW + 100


# ------------------------------------------------------- 6. node choice (placement)

def _four_nodes_with(running_jobs: list[Job], pend: list[Job], placement: str
                     ) -> dict[str, scheduler_core.Prediction]:
    return run(running_jobs + pend, node_list=nodes(4), placement=placement)


def _busy(id: str, node: str, gpu: float, cpu: float) -> Job:
    return Job(id=id, state="running", request={"gpu": gpu, "cpu": cpu}, nodes=[node],
               start_time=NOW - 100, time_limit=5100)


def test_consecutive_takes_the_tightest_run_of_nodes_not_the_tightest_node() -> None:
    """n1 is full; n3 runs a 2-GPU, 10-CPU job. A 1-GPU job can go to n0, n2 or n3:
    the runs of consecutive candidates are {n0} (64 free CPUs) and {n2, n3} (118).
    Slurm's rule takes the run with the fewest CPUs that holds the job: n0. Best fit
    by GPUs left takes n3. A 2-node job of 4 GPUs a node needs a run of two: {n2, n3}
    — best fit would pair n3 with n0."""
    busy = [_busy("full", "n1", 8, 8), _busy("part", "n3", 2, 10)]
    one = [Job(id="one", request={"gpu": 1, "cpu": 1}, submit_time=NOW - 100, time_limit=600)]
    two = [Job(id="two", request={"gpu": 8, "cpu": 2}, nodes_requested=2,
                submit_time=NOW - 100, time_limit=600)]
    assert _four_nodes_with(busy, one, "consecutive")["one"].nodes == ["n0"]
    assert _four_nodes_with(busy, one, "best_fit")["one"].nodes == ["n3"]
    assert _four_nodes_with(busy, two, "consecutive")["two"].nodes == ["n2", "n3"]
    assert _four_nodes_with(busy, two, "best_fit")["two"].nodes == ["n0", "n3"]


def test_consecutive_best_fit_by_cpus_inside_the_run() -> None:
    """All four nodes take the job and form one run; inside it one node is chosen by
    the fewest free CPUs: n2 (40 free) over n1 (50 free), though n1 has fewer GPUs
    left."""
    busy = [_busy("a", "n1", 6, 14), _busy("b", "n2", 1, 24)]
    one = [Job(id="one", request={"gpu": 1, "cpu": 1}, submit_time=NOW - 100, time_limit=600)]
    assert _four_nodes_with(busy, one, "consecutive")["one"].nodes == ["n2"]
    assert _four_nodes_with(busy, one, "best_fit")["one"].nodes == ["n1"]


def test_consecutive_while_no_run_holds_the_job_the_biggest_goes_first() -> None:
    """n2 is full. Runs: {n0, n1} with 20 free CPUs (holds a 2-node job) and {n3}
    with 64. Slurm's comparison lets a run that cannot hold the rest replace one that
    can when it has more CPUs, so n3 is taken first, then the fewest-CPU node of
    {n0, n1} for the one node left: n1 (8 free) — as job_test.c does."""
    busy = [_busy("f", "n2", 8, 8), _busy("a", "n0", 1, 52), _busy("b", "n1", 1, 56)]
    two = [Job(id="two", request={"gpu": 2, "cpu": 2}, nodes_requested=2,
                submit_time=NOW - 100, time_limit=600)]
    assert _four_nodes_with(busy, two, "consecutive")["two"].nodes == ["n1", "n3"]


def test_consecutive_on_equal_cpus_the_first_run_wins() -> None:
    """n1 is full; n2 and n3 run a 1-GPU, 32-CPU job each. Runs: {n0} with 64 free
    CPUs and {n2, n3} with 32 + 32 = 64. Slurm keeps the first run on a tie: n0,
    though n2 is the tightest node (the core walks nodes fewest CPUs first and must
    not stop at the later run). Best fit by GPUs left takes n2."""
    busy = [_busy("full", "n1", 8, 8), _busy("a", "n2", 1, 32), _busy("b", "n3", 1, 32)]
    one = [Job(id="one", request={"gpu": 1, "cpu": 1}, submit_time=NOW - 100, time_limit=600)]
    assert _four_nodes_with(busy, one, "consecutive")["one"].nodes == ["n0"]
    assert _four_nodes_with(busy, one, "best_fit")["one"].nodes == ["n2"]


def test_site_policy_picks_consecutive_for_cons_tres_only() -> None:
    from quotatop.collectors.slurm.sched_config import scheduler_config
    from quotatop.scheduler_core.site import site_policy

    base = {"SelectType": "select/cons_tres", "SelectTypeParameters": "CR_Core_Memory"}
    assert site_policy(Snapshot(scheduler=scheduler_config(base))).placement == "consecutive"
    for extra in ({"SelectTypeParameters": "CR_Core_Memory,CR_LLN"},
                  {"TopologyPlugin": "topology/tree"},
                  {"SchedulerParameters": "bf_busy_nodes"},
                  {"SelectType": "select/linear"}):
        cfg = scheduler_config({**base, **extra})
        assert site_policy(Snapshot(scheduler=cfg)).placement == "best_fit", extra


# ----------------------------------------------- 7. a queue that states its order

def test_a_stated_queue_position_orders_before_priority() -> None:
    """One 8-GPU node, busy until +1000; every job asks all of it for 600 s. By age
    alone a (oldest) goes first. The source states team x's queue as b, a (Kueue's
    visibility API does) and team y's as c: positions first, so b and c (both at
    place 0, b older) run before a: b +1000, c +1600, a +2200."""
    r = Job(id="r", state="running", request={"gpu": 8}, nodes=["n0"], start_time=NOW - 100,
            time_limit=1100)
    jobs = [r, pending("a", 8, age=300, team="x"), pending("b", 8, age=200, team="x"),
            pending("c", 8, age=100, team="y")]
    plain = run(jobs, node_list=nodes(1))
    assert [plain[j].start - NOW for j in "abc"] == [1000, 1600, 2200]
    stated = [r, pending("a", 8, age=300, team="x", queue_position=1),
              pending("b", 8, age=200, team="x", queue_position=0),
              pending("c", 8, age=100, team="y", queue_position=0)]
    got = run(stated, node_list=nodes(1))
    assert [got[j].start - NOW for j in "bca"] == [1000, 1600, 2200]


# ------------------------------------------------ 8. usage the source states itself

def test_usage_no_visible_job_holds_counts_against_the_team_quota() -> None:
    """Team q may hold 8 GPUs (max); Kueue's status says it holds 6 of them, but the
    reader sees only a 2-GPU running job (the other 4 are workloads it cannot list).
    A 4-GPU job would fit a recount (2 + 4 <= 8) but not Kueue's count (6 + 4 > 8):
    it waits for the visible job's end at +1000, which takes usage to 4. With the
    same status and no unseen part, it starts now."""
    r = running("r", 2, team="q", ends=1000)
    p = pending("p", 4, team="q")
    recount = run([r, p], teams=[Team(name="q", max={"gpu": 8})])
    assert recount["p"].start == NOW
    stated = run([r, p], teams=[Team(name="q", max={"gpu": 8}, usage={"gpu": 6},
                                     unseen_usage={"gpu": 4})])
    assert stated["p"].start == NOW + 1000
    assert stated["p"].binding == "team q max gpu"
    assert "holds 6, asks 4" in (stated["p"].reason or "")


# ------------------------------------------- backfill reservations as Slurm holds them

def test_a_reservation_held_whole_keeps_a_small_job_off_its_node() -> None:
    """n0: r0 holds 6 of 8 GPUs to +100; n1: r1 holds 8 to +1000. p (first) asks 4:
    reserved on n0 from +100. q asks 2 for 600 s and fits n0 now. Reserving only p's
    share, n0 keeps 8 - 2 = 6 >= 4 at +100: q starts now. Held whole (as Slurm's
    backfill does), q on n0 would still run at +100: it waits, and starts at +100
    beside p (4 + 2 of 8)."""
    jobs = [running("r0", 6, "n0", ends=100), running("r1", 8, "n1"),
            pending("p", 4, age=200), pending("q", 2, age=100)]
    share = run(jobs)
    assert share["q"].state == "starts_now" and share["q"].nodes == ["n0"]
    whole = run(jobs, reserve_whole_nodes=True)
    assert whole["p"].start == NOW + 100 and whole["p"].nodes == ["n0"]
    assert whole["q"].state == "planned" and whole["q"].start == NOW + 100
    assert "reservation" in whole["q"].reason


def test_a_reservation_starts_when_its_job_first_fits_not_on_the_grid() -> None:
    """bf_resolution 60. n0: r0 holds 7 of 8 GPUs to +110; n1: r1 holds 8 to +100. p
    (first) asks 8. Snapped up to the grid, both nodes free by +120 and p's
    reservation takes the first, n0: q (1 GPU for 1000 s, fits n0 now) would delay
    it, and waits. Started where p first fits (+100, n1 only, as Slurm's will-run
    test finds it), the reservation holds n1, and q starts now on n0; with a pass at
    each end, p starts at +100 on n1."""
    jobs = [running("r0", 7, "n0", ends=110), running("r1", 8, "n1", ends=100),
            pending("p", 8, age=200), pending("q", 1, age=100, limit=1000)]
    grid = run(jobs, bf_resolution=60.0, reserve_whole_nodes=True)
    assert grid["q"].state == "planned"
    exact = run(jobs, bf_resolution=60.0, reserve_whole_nodes=True, floor_to_grid=True,
                passes="events")
    assert exact["q"].state == "starts_now" and exact["q"].nodes == ["n0"]
    assert exact["p"].start == NOW + 100 and exact["p"].nodes == ["n1"]


def test_start_windows_draw_when_the_scheduler_answers_an_end() -> None:
    """r fills n0 and reaches its limit at +50 in every draw (its one past run, 1000 s,
    is far past the limit). p waits for it. With passes at each event after
    pass_delay 1 s, each sample answers r's end after a delay drawn from an
    exponential of mean 1 s (cut at 10 s): p's window spans about [+50.1, +52.3],
    median +50.7. With pass_delay 0 it is the one instant."""
    snap = Snapshot(taken_at=NOW, nodes=nodes(1), jobs=[
        running("r", 8, ends=50, runtime_history=[1000.0]), pending("p", 8)])

    def window(delay: float) -> scheduler_core.StartWindow:
        pol = Policy(bf_resolution=1.0, weights=AGE, passes="events", pass_delay=delay)
        (w,) = scheduler_core.predict_windows(snap, pol, 86400, samples=200)
        return w

    w = window(1.0)
    assert NOW + 50 <= w.p10 < w.p50 < w.p90 <= NOW + 60
    assert w.p10 < NOW + 50.5 < w.p50 < NOW + 51 < w.p90
    assert w.p90 - w.p10 > 1.0
    still = window(0.0)
    assert still.p10 == still.p50 == still.p90 == NOW + 50
