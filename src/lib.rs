//! kapply: make `kubectl apply` visible and interactive.
//!
//! The core (manifests, merge, plan and their vocabulary) is the crate
//! `kapply-core`, the embedded API server the crate `kapply-apiserver`; both
//! are re-exported here under their old paths (`kapply::merge`,
//! `kapply::server`), so the app and the tests name them as before.

pub use kapply_apiserver as server;
pub use kapply_core::{
    defaults, export, fieldpath, gocompat, jsonread, managedfields, manifest, mask, merge, objref,
    patchmeta, plan, resource, selector, ssa, text, vocab, yaml,
};

pub mod cli;
pub mod cluster;
pub mod demo;
pub mod entry;
pub mod files;
pub mod highlight;
pub mod inputs;
pub mod ops;
pub mod signals;
pub mod transport;
pub mod tui;
