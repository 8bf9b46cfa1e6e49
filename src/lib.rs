pub mod backend;
pub mod collective;
pub mod dag;
pub mod topology;
pub mod units;
pub mod workload;
