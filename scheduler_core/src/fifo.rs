//! Per-team FIFO under a per-team cap: the seed article's `ClusterQuota`.
//!
//! A submit queues when the team already has a queue (no overtaking) or when
//! it would exceed the cap; a finish frees capacity and starts queued jobs from
//! the head while the head fits, never skipping it.

use std::collections::{BTreeMap, VecDeque};

#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Submit { team: String, amount: f64 },
    Finish { team: String, amount: f64 },
}

#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Running,
    Queued,
    /// Number of queued jobs a finish started.
    Started(usize),
}

#[derive(Debug, Clone, PartialEq)]
pub struct TeamState {
    pub used: f64,
    pub queued: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub outcome: Outcome,
    /// Every team's state after the event, in the order the teams were given.
    pub teams: Vec<(String, TeamState)>,
}

pub struct ClusterQuota {
    order: Vec<String>,
    cap: BTreeMap<String, f64>,
    used: BTreeMap<String, f64>,
    wait: BTreeMap<String, VecDeque<f64>>,
    pub granted: u64,
}

impl ClusterQuota {
    pub fn new(caps: &[(String, f64)]) -> Result<ClusterQuota, String> {
        let mut q = ClusterQuota {
            order: Vec::new(),
            cap: BTreeMap::new(),
            used: BTreeMap::new(),
            wait: BTreeMap::new(),
            granted: 0,
        };
        for (team, cap) in caps {
            if q.cap.contains_key(team) {
                return Err(format!("team {team:?} is listed twice"));
            }
            if !cap.is_finite() || *cap < 0.0 {
                return Err(format!("team {team:?} has a negative or invalid cap {cap}"));
            }
            q.order.push(team.clone());
            q.cap.insert(team.clone(), *cap);
            q.used.insert(team.clone(), 0.0);
            q.wait.insert(team.clone(), VecDeque::new());
        }
        Ok(q)
    }

    fn check(&self, team: &str, amount: f64) -> Result<(), String> {
        if !self.cap.contains_key(team) {
            return Err(format!("unknown team {team:?}"));
        }
        if !amount.is_finite() || amount < 0.0 {
            return Err(format!("invalid amount {amount} for team {team:?}"));
        }
        Ok(())
    }

    pub fn submit(&mut self, team: &str, amount: f64) -> Result<Outcome, String> {
        self.check(team, amount)?;
        let wait = self.wait.get_mut(team).expect("checked");
        let used = self.used.get_mut(team).expect("checked");
        if !wait.is_empty() || *used + amount > self.cap[team] {
            wait.push_back(amount);
            return Ok(Outcome::Queued);
        }
        *used += amount;
        self.granted += 1;
        Ok(Outcome::Running)
    }

    pub fn finish(&mut self, team: &str, amount: f64) -> Result<Outcome, String> {
        self.check(team, amount)?;
        let cap = self.cap[team];
        let wait = self.wait.get_mut(team).expect("checked");
        let used = self.used.get_mut(team).expect("checked");
        // The seed clamps at zero rather than rejecting a finish it never started.
        *used = (*used - amount).max(0.0);
        let mut moved = 0;
        while let Some(&head) = wait.front() {
            if *used + head > cap {
                break;
            }
            wait.pop_front();
            *used += head;
            self.granted += 1;
            moved += 1;
        }
        Ok(Outcome::Started(moved))
    }

    pub fn state(&self) -> Vec<(String, TeamState)> {
        self.order
            .iter()
            .map(|t| {
                (
                    t.clone(),
                    TeamState {
                        used: self.used[t],
                        queued: self.wait[t].len(),
                    },
                )
            })
            .collect()
    }

    pub fn apply(&mut self, event: &Event) -> Result<Step, String> {
        let outcome = match event {
            Event::Submit { team, amount } => self.submit(team, *amount)?,
            Event::Finish { team, amount } => self.finish(team, *amount)?,
        };
        Ok(Step {
            outcome,
            teams: self.state(),
        })
    }
}

/// Runs a whole timeline; the error names the 1-based step that failed.
pub fn run(caps: &[(String, f64)], events: &[Event]) -> Result<(Vec<Step>, u64), String> {
    let mut q = ClusterQuota::new(caps)?;
    let mut steps = Vec::with_capacity(events.len());
    for (i, e) in events.iter().enumerate() {
        steps.push(q.apply(e).map_err(|m| format!("step {}: {m}", i + 1))?);
    }
    Ok((steps, q.granted))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(t: &str, a: f64) -> Event {
        Event::Submit {
            team: t.into(),
            amount: a,
        }
    }
    fn fin(t: &str, a: f64) -> Event {
        Event::Finish {
            team: t.into(),
            amount: a,
        }
    }

    #[test]
    fn seed_demo_grants_seven() {
        let caps = vec![
            ("alpha".into(), 24.0),
            ("beta".into(), 16.0),
            ("gamma".into(), 16.0),
        ];
        let events = vec![
            sub("alpha", 8.0),
            sub("beta", 16.0),
            sub("gamma", 8.0),
            sub("alpha", 16.0),
            sub("gamma", 12.0),
            sub("beta", 4.0),
            fin("alpha", 8.0),
            fin("gamma", 8.0),
            sub("alpha", 8.0),
            fin("beta", 16.0),
        ];
        let (steps, granted) = run(&caps, &events).unwrap();
        assert_eq!(granted, 7);
        assert_eq!(steps[4].outcome, Outcome::Queued);
        assert_eq!(steps[7].outcome, Outcome::Started(1));
        assert_eq!(steps[9].outcome, Outcome::Started(1));
    }

    #[test]
    fn head_is_never_skipped() {
        let caps = vec![("a".into(), 10.0)];
        let events = vec![sub("a", 8.0), sub("a", 6.0), sub("a", 1.0), fin("a", 3.0)];
        let (steps, _) = run(&caps, &events).unwrap();
        // 1 would fit after the finish, but the 6 at the head does not.
        assert_eq!(steps[2].outcome, Outcome::Queued);
        assert_eq!(steps[3].outcome, Outcome::Started(0));
        assert_eq!(steps[3].teams[0].1.queued, 2);
    }

    #[test]
    fn unknown_team_names_the_step() {
        let caps = vec![("a".into(), 1.0)];
        let err = run(&caps, &[sub("a", 1.0), sub("zeta", 1.0)]).unwrap_err();
        assert_eq!(err, "step 2: unknown team \"zeta\"");
    }
}
