//! Pure shaping decisions (Pace 2018, chapter 4, Algorithm 3 and eq. 4.3).
//!
//! `decide(view, now_s, config) -> Plan`: cluster view + forecasts +
//! parameters in, a plan out. No clock reads, no I/O: the agent, the central
//! shaper and the simulator all run this one implementation.

pub mod model;

pub use model::*;
