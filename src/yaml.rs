//! The one YAML module (owned by the manifest work).
