//! cargo run --release --example time_prune -- FILE: time one prune of FILE's "jobs".
fn main() {
    let path = std::env::args().nth(1).expect("a JSON file");
    let data = std::fs::read(path).expect("readable");
    let keep: Vec<&[u8]> = [
        "account",
        "array_job_id",
        "array_task_id",
        "array_task_string",
        "dependency",
        "eligible_time",
        "end_time",
        "job_id",
        "job_state",
        "name",
        "nodes",
        "node_count",
        "partition",
        "priority",
        "qos",
        "start_time",
        "state_reason",
        "submit_time",
        "time_limit",
        "tres_req_str",
        "user_name",
    ]
    .iter()
    .map(|k| k.as_bytes())
    .collect();
    let n: usize = std::env::var("REPEAT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6);
    for _ in 0..n {
        let t = std::time::Instant::now();
        let out = json_prune::prune(&data, b"jobs", &keep).expect("JSON");
        println!(
            "{:.3} s, {} -> {} bytes",
            t.elapsed().as_secs_f64(),
            data.len(),
            out.len()
        );
    }
}
