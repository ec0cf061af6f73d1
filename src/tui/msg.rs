//! Every input the app reacts to ([`Msg`]) and every side effect it asks
//! the runtime for ([`Effect`]).

use crate::ops::{
    ApplyItem, ExportTarget, Exported, LiveEvent, ObjectResult, Progress, Propagation, Rows,
};
use crate::plan::{ObjectPlan, Plan};
use crossterm::event::{KeyEvent, MouseEvent};

/// Every input the app reacts to.
#[derive(Debug, Clone)]
pub enum Msg {
    /// A key press (the key table in `keymap` says what it does).
    Key(KeyEvent),
    /// A click or a wheel turn.
    Mouse(MouseEvent),
    /// The terminal's new size (columns, rows).
    Resize(u16, u16),
    /// The spinner's clock (a redraw only while something is under way).
    Tick,
    /// How far a load (non-streamed) is.
    Progress(Progress),
    /// Objects a load has planned so far (a streamed load), and how far it is.
    Rows(Rows),
    /// The engine connected (the server answered), or why not.
    Connected(Result<(), String>),
    /// The manifests alone, read while live state loads.
    Manifests(Result<Plan, String>),
    /// The plan against live state (answers `Effect::Load`), or why not.
    Loaded(Result<Plan, String>),
    /// The server's dry run of an apply confirmation (`Effect::DryRun`).
    DryRunDone(Vec<ObjectResult>),
    /// The server's dry run of a prune confirmation (`Effect::PruneDryRun`).
    PruneDryRunDone(Vec<ObjectResult>),
    /// The server's dry run of a server-side apply confirmation
    /// (`Effect::ServerSideDryRun`).
    ServerSideDryRunDone(Vec<ObjectResult>),
    /// Of the objects the server's dry run under way checks (an apply's or
    /// a prune's), how many it has answered.
    DryRunProgress { done: usize, total: usize },
    /// Of the objects an apply, delete or prune under way writes, how many
    /// are done (written, failed or not sent).
    WriteProgress { done: usize, total: usize },
    /// An apply's results (`Effect::Apply`), one per object sent or not.
    Applied(Vec<ObjectResult>),
    /// A delete's results (`Effect::Delete`).
    Deleted(Vec<ObjectResult>),
    /// A prune's results (`Effect::Prune`).
    Pruned(Vec<ObjectResult>),
    /// A recreate's results (`Effect::Recreate`).
    Recreated(Vec<ObjectResult>),
    /// Where to write an object's export (`E`), or why it cannot be.
    ExportAsk(ObjectPlan, Result<ExportTarget, String>),
    /// An export's outcome.
    Exported(ObjectPlan, Result<Exported, String>),
    /// What the watch started by `Effect::Watch(n)` reports (`n` tells a
    /// watch of an older load, whose reports are dropped).
    Live(u64, LiveEvent),
    /// The watch `n` stopped following the cluster: why.
    LiveStopped(u64, String),
    /// The editor `e` opened has exited (or could not be started: why).
    Edited(Result<(), String>),
}

/// Work for the runtime. Destructive ones are only produced by a confirm.
#[derive(Debug, Clone)]
pub enum Effect {
    /// Connect to the server (again); answered by `Msg::Connected`.
    Connect,
    /// Read the manifests without the cluster; answered by `Msg::Manifests`.
    ReadManifests,
    /// Plan the manifests against live state; answered by `Msg::Loaded`
    /// (and `Msg::Rows` as a streamed load goes).
    Load,
    /// The server's dry run of what a confirmation would apply; answered by
    /// `Msg::DryRunDone`.
    DryRun(Vec<ApplyItem>),
    /// Apply (only after a confirm); answered by `Msg::Applied`.
    Apply(Vec<ApplyItem>),
    /// The server's dry run of a server-side apply, as field manager
    /// `manager`; answered by `Msg::ServerSideDryRunDone`.
    ServerSideDryRun(Vec<crate::ops::ServerSideItem>, String),
    /// Apply server-side (only after its confirmation); answered by
    /// `Msg::Applied`.
    ServerSideApply(Vec<crate::ops::ServerSideItem>, String),
    /// Delete with a propagation policy (only after a confirm); answered by
    /// `Msg::Deleted`.
    Delete(Vec<ObjectPlan>, Propagation),
    /// Prune (only after a confirm); answered by `Msg::Pruned`.
    Prune(Vec<ObjectPlan>),
    /// Apply, replacing what the server refuses as invalid: delete (uid
    /// precondition), wait until gone, create (only after the recreate
    /// confirmation); answered by `Msg::Recreated`.
    Recreate(Vec<ApplyItem>),
    /// The server's dry run of a prune; answered by `Msg::PruneDryRunDone`.
    PruneDryRun(Vec<ObjectPlan>),
    /// Propose a path for an object's export; the manifest file that holds
    /// only this object, if any.
    ExportTarget(ObjectPlan, Option<String>),
    /// Write an object's export to a path (`true`: overwrite an existing file).
    Export(ObjectPlan, String, bool),
    /// Follow the cluster from what the load just read (the runtime stops
    /// the watch before it): answered by `Msg::Live` as things change,
    /// `Msg::LiveStopped` if it gives up.
    Watch(u64),
    /// Open a manifest in the user's editor at a line (the runtime suspends
    /// the terminal meanwhile); answered by `Msg::Edited`.
    Edit { file: String, line: u32 },
    /// Leave: the runtime aborts what is under way and restores the terminal.
    Quit,
}
