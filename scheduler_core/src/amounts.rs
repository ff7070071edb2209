//! Amounts as every layer reads and writes them: no limit is infinity, and an amount in a
//! reason is a whole number when it is one. Here, below `cluster`, `limits` and
//! `engine`, because all three use them (kept in any one of them, the others would
//! import it back: issue #32 item 6).

/// No limit: a quota, a cap or a time with no bound.
pub const INF: f64 = f64::INFINITY;

/// `8`, not `8.00`; `0.25` when there is a fraction.
pub fn fmt_amount(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x:.2}")
    }
}
