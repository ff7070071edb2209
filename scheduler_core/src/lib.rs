//! quotatop's scheduling core: from a snapshot (nodes, jobs, teams, QoS and a
//! policy) predict what the scheduler does next, or simulate a workload. It
//! knows nothing of Slurm or Kubernetes; collectors map those into the snapshot
//! model first.

// Resource vectors are indexed by dimension (cpu, memory, gpu) throughout:
// index loops read clearer than zipped iterators there.
#![allow(clippy::needless_range_loop, clippy::type_complexity)]

pub mod amounts;
pub mod api;
pub mod bestfit;
pub mod cluster;
pub mod engine;
pub mod fairtree;
pub mod features;
pub mod fifo;
pub mod freeindex;
pub mod fxhash;
pub mod limits;
pub mod policy;
pub mod windows;
pub mod wire;

#[cfg(feature = "python")]
mod python;
