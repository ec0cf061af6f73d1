//! kapply: make `kubectl apply` visible and interactive.
//!
//! Core modules (`objref`, `selector`, `yaml`, `manifest`, `patchmeta`, `merge`, `plan`,
//! `defaults`, `export`, `fieldpath`, `gocompat`, `vocab`, `mask`,
//! `managedfields`, `jsonread`, `ssa`) do no I/O
//! beyond reading manifest files and import neither ratatui, crossterm nor kube.

pub mod cli;
pub mod cluster;
pub mod defaults;
pub mod demo;
pub mod entry;
pub mod export;
pub mod fieldpath;
pub mod files;
pub mod gocompat;
pub mod highlight;
pub mod inputs;
pub mod jsonread;
pub mod managedfields;
pub mod manifest;
pub mod mask;
pub mod merge;
pub mod objref;
pub mod ops;
pub mod patchmeta;
pub mod plan;
pub mod resource;
pub mod selector;
pub mod server;
pub mod signals;
pub mod ssa;
pub mod text;
pub mod transport;
pub mod tui;
pub mod vocab;
pub mod yaml;
