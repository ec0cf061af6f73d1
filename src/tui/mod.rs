//! The interactive TUI (Elm style): one [`App`] holds all state, every input
//! becomes a [`Msg`], `App::update` returns [`Effect`]s as data, and the
//! runtime ([`run`]) performs them on tokio tasks against an
//! [`Engine`](crate::ops::Engine), feeding results back as messages.

pub mod app;
pub mod detail;
pub mod dialogs;
pub mod fieldtable;
pub mod keymap;
pub mod layout;
pub mod runtime;
pub mod scroll;
pub mod theme;
pub mod ui;
pub mod yamlview;

pub use app::{App, Effect, Msg, Options, ServerSideMode};
pub use runtime::{Ended, run};
