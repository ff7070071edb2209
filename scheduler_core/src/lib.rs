//! quotatop's scheduling core: from a snapshot (nodes, jobs, teams, QoS and a
//! policy) predict what the scheduler does next. It knows nothing of Slurm or
//! Kubernetes; collectors map those into the snapshot model first.

pub mod fifo;
pub mod model;

#[cfg(feature = "python")]
mod python;
