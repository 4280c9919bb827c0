//! Cluster mode: central shaper server, agent client, wire protocol (being built).
