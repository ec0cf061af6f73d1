//! Manifest loading (owned by the manifest work).
