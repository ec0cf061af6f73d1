//! The interactive TUI (Elm style): one [`App`] holds all state, every input
//! becomes a [`Msg`], `App::update` returns [`Effect`]s as data, and the
//! runtime ([`run`]) performs them on tokio tasks against an
//! [`Engine`](crate::ops::Engine), feeding results back as messages.
//!
//! Imports go one way: `app` (the state's transitions) uses the state
//! types (`state`, `confirm`, `msg`) and the helpers (`layout`, `theme`,
//! `dialogs`, `fieldtable`, `yamlview`, ...); `ui` draws, building each
//! view from the app in `ui/mod.rs`; no helper imports `app` or `ui`. The
//! modules form no cycle at all (`tests/layering.rs` checks).

pub mod app;
pub mod confirm;
pub mod detail;
pub mod dialogs;
pub mod fieldtable;
pub mod job;
pub mod keymap;
pub mod layout;
pub mod msg;
pub mod runtime;
pub mod scroll;
pub mod state;
pub mod theme;
pub mod ui;
pub mod yamlview;

pub use app::{App, Effect, Msg, Options, ServerSideMode};
pub use runtime::{Ended, run};
