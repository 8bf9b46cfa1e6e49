//! Workloads that are not collectives: synthetic network traffic patterns.

pub mod traffic;
