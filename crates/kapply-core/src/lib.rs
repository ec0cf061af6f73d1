//! kapply's core: manifests, the three-way merge, plans and their vocabulary.
//!
//! Plain functions over plain data: no I/O beyond reading manifest files, and
//! no runtime, UI, command-line or Kubernetes client crate (this crate's
//! `Cargo.toml` does not list them, so the compiler enforces it).

pub mod defaults;
pub mod export;
pub mod fieldpath;
pub mod gocompat;
pub mod jsonread;
pub mod managedfields;
pub mod manifest;
pub mod mask;
pub mod merge;
pub mod objref;
pub mod patchmeta;
pub mod plan;
pub mod resource;
pub mod selector;
pub mod ssa;
pub mod text;
pub mod vocab;
pub mod yaml;
