//! The jobs the TUI runs, one home below both the state (which jobs are
//! under way) and the confirmations (which job a confirmed action starts),
//! so neither imports the other for it.

/// A job under way: what the status line names and what decides whether a
/// message still applies (its own writes are not another writer's changes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Job {
    /// Reaching the cluster (the first load).
    Connecting,
    /// Reading the manifests and the live objects.
    Loading,
    /// The server dry run of a confirmation.
    DryRun,
    /// Reading the live objects an export writes.
    ReadForExport,
    /// Writing export files.
    Exporting,
    Applying,
    Deleting,
    Pruning,
    /// Deleting and creating again what the server refused to update.
    Recreating,
}

impl Job {
    /// The status line's word for it.
    pub fn label(self) -> &'static str {
        match self {
            Job::Connecting => "connecting",
            Job::Loading => "loading",
            Job::DryRun => "server dry run",
            Job::ReadForExport => "export",
            Job::Exporting => "exporting",
            Job::Applying => "applying",
            Job::Deleting => "deleting",
            Job::Pruning => "pruning",
            Job::Recreating => "recreating",
        }
    }

    /// Whether it writes to the cluster (its results reload everything).
    pub fn writes(self) -> bool {
        matches!(
            self,
            Job::Applying | Job::Deleting | Job::Pruning | Job::Recreating
        )
    }
}
