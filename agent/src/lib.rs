//! tailor's per-node daemon (sampling, forecasting, actuation through Docker)
//! and, in `cluster`, the central shaper server and its client.

pub mod cluster;
