//! A confirmation as data (gitui's ConfirmPopup holds the `Action` it
//! runs): what it asks, its keys, the server's dry run, and the
//! [`Confirmed`] action only its confirm key turns into an [`Effect`].
//! The app builds one when it opens (`app::confirm`); `dialogs` draws it.

use crate::objref::ObjectRef;
use crate::ops::{ApplyItem, Failure, ObjectResult, Outcome, Propagation};
use crate::plan::ObjectPlan;
use crate::tui::job::Job;
use crate::tui::msg::Effect;
use crate::tui::theme::{Theme, keys_line};
use crossterm::event::KeyCode;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

/// What a confirmation confirms: each is one [`Effect`] once confirmed.
#[derive(Debug, Clone)]
pub enum Confirmed {
    /// Apply these objects (`a`), after the server's dry run.
    Apply(Vec<ApplyItem>),
    /// Apply these objects server-side as `manager` (`a` with
    /// `--server-side`), after the server's dry run.
    ServerSideApply {
        items: Vec<crate::ops::ServerSideItem>,
        manager: String,
    },
    /// Prune (delete) the objects queued while stepping (`p`), after the
    /// server's dry run.
    Prune(Vec<ObjectPlan>),
    /// Delete these objects from the cluster (`D`).
    Delete {
        objects: Vec<ObjectPlan>,
        /// `c` cycles Background → Foreground → Orphan.
        propagation: Propagation,
    },
    /// Delete each and create it again from its manifest (`F`).
    Recreate(Vec<ApplyItem>),
    /// Write the export into a file that exists (`E`).
    Export {
        object: Box<ObjectPlan>,
        path: String,
    },
    /// Quit, dropping marks and queued deletes (or leaving a recreate
    /// wherever it is).
    Quit,
}

impl Confirmed {
    /// The effect once confirmed, with the job it starts.
    pub(crate) fn run(self) -> (Option<Job>, Effect) {
        match self {
            Confirmed::Apply(items) => (Some(Job::Applying), Effect::Apply(items)),
            Confirmed::ServerSideApply { items, manager } => {
                (Some(Job::Applying), Effect::ServerSideApply(items, manager))
            }
            Confirmed::Prune(objects) => (Some(Job::Pruning), Effect::Prune(objects)),
            Confirmed::Delete {
                objects,
                propagation,
            } => (Some(Job::Deleting), Effect::Delete(objects, propagation)),
            Confirmed::Recreate(items) => (Some(Job::Recreating), Effect::Recreate(items)),
            Confirmed::Export { object, path } => {
                (Some(Job::Exporting), Effect::Export(*object, path, true))
            }
            Confirmed::Quit => (None, Effect::Quit),
        }
    }

    /// The server's dry run that answers before it is confirmed (apply,
    /// server-side apply, prune), if it has one.
    pub(crate) fn dry_run(&self) -> Option<Effect> {
        match self {
            Confirmed::Apply(items) => Some(Effect::DryRun(items.clone())),
            Confirmed::ServerSideApply { items, manager } => {
                Some(Effect::ServerSideDryRun(items.clone(), manager.clone()))
            }
            Confirmed::Prune(objects) => Some(Effect::PruneDryRun(objects.clone())),
            _ => None,
        }
    }

    /// The server's verdict as drawn, once it answers: a line per object,
    /// `✓` or `✗` and what the server said.
    pub(crate) fn verdict(&self, results: &[ObjectResult], t: Theme) -> Vec<Line<'static>> {
        if results.is_empty() && matches!(self, Confirmed::Prune(_)) {
            return vec![Line::from(Span::styled(
                "  no cluster to ask (nothing was checked)",
                t.fg(Color::DarkGray),
            ))];
        }
        let mut lines = Vec::new();
        for r in results {
            let (m, s) = verdict_mark(r, t);
            let text = format!("{}: {}", r.object, r.message());
            if let Confirmed::ServerSideApply { .. } = self {
                // A conflict's message names its fields a line each.
                for (n, l) in text.lines().enumerate() {
                    let lead = if n == 0 {
                        format!("  {m} ")
                    } else {
                        "    ".into()
                    };
                    lines.push(Line::from(Span::styled(format!("{lead}{l}"), s)));
                }
            } else {
                lines.push(Line::from(Span::styled(format!("  {m} {text}"), s)));
            }
            // The way forward for an update refused as invalid.
            if matches!(self, Confirmed::Apply(_)) && invalid(r) {
                lines.push(Line::from(Span::styled(
                    "    F recreates it: deletes it and creates it again from the manifest \
                     (downtime; its own confirmation first)",
                    t.fg(Color::Yellow).add_modifier(Modifier::BOLD),
                )));
            }
        }
        lines
    }

    /// Whether it acts on `object` (a change in the cluster withdraws it).
    pub fn touches(&self, object: &ObjectRef) -> bool {
        match self {
            Confirmed::Apply(items) | Confirmed::Recreate(items) => {
                items.iter().any(|it| it.plan.id() == *object)
            }
            Confirmed::ServerSideApply { items, .. } => {
                items.iter().any(|it| it.plan.id() == *object)
            }
            Confirmed::Prune(objects) => objects.iter().any(|o| o.id() == *object),
            Confirmed::Delete { objects, .. } => objects.iter().any(|o| o.id() == *object),
            Confirmed::Export { object: o, .. } => o.id() == *object,
            Confirmed::Quit => false,
        }
    }
}

/// A key a confirmation offers besides confirming and cancelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extra {
    /// The delete's next propagation policy.
    CyclePropagation,
    /// Ask the server's dry run again (once it has answered).
    RetryDryRun,
    /// Recreate what the dry run refused as invalid (its own confirmation
    /// follows).
    RecreateRefused,
}

impl Extra {
    /// Its key, and what the footer calls it.
    pub fn key(self) -> (char, &'static str) {
        match self {
            Extra::CyclePropagation => ('c', "propagation"),
            Extra::RetryDryRun => ('r', "retry dry run"),
            Extra::RecreateRefused => ('F', "recreate the refused"),
        }
    }

    /// Whether the footer names it, given the dry run's answer: a retry
    /// once something failed, a recreate once something was refused as
    /// invalid (either works whenever the server has answered).
    pub(crate) fn shown(self, results: &[ObjectResult]) -> bool {
        match self {
            Extra::CyclePropagation => true,
            Extra::RetryDryRun => results.iter().any(|r| !r.ok()),
            Extra::RecreateRefused => results.iter().any(invalid),
        }
    }
}

/// Whether the server refused it as invalid (an immutable field).
pub(crate) fn invalid(r: &ObjectResult) -> bool {
    matches!(r.outcome, Outcome::Failed(Failure::Invalid(_)))
}

/// A dry-run verdict's mark and colour: `✓` done (or would be), `✗` not.
pub(crate) fn verdict_mark(r: &ObjectResult, t: Theme) -> (&'static str, Style) {
    if r.ok() {
        ("✓", t.fg(Color::Green))
    } else {
        ("✗", t.fg(Color::Red))
    }
}

/// The server's dry run of a confirmation: its answer once it has come.
#[derive(Debug, Clone)]
pub struct DryRun {
    pub results: Option<Vec<ObjectResult>>,
    /// The answer as drawn (built when it comes).
    pub verdict: Vec<Line<'static>>,
    /// Said when the confirm key is pressed before the answer.
    pub waiting_note: &'static str,
}

impl DryRun {
    pub(crate) fn asked(waiting_note: &'static str) -> DryRun {
        DryRun {
            results: None,
            verdict: Vec::new(),
            waiting_note,
        }
    }
}

/// The count typed before the confirm key counts (more than one object
/// deleted: a stray Enter must not delete many).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Count {
    pub count: usize,
    pub typed: String,
}

/// How wide a confirmation is drawn, borders included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Width {
    Fixed(u16),
    /// The screen's width, less a margin (real objects have long paths
    /// and values).
    Screen,
    /// The screen's width (less a margin), at most this.
    ScreenUpTo(u16),
}

impl Width {
    pub fn of(self, screen: u16) -> u16 {
        match self {
            Width::Fixed(w) => w,
            Width::Screen => screen.saturating_sub(4),
            Width::ScreenUpTo(max) => screen.saturating_sub(4).min(max),
        }
    }
}

/// The keys that confirm or cancel, and what the footer calls them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keys {
    pub codes: &'static [KeyCode],
    pub label: &'static str,
}

impl Keys {
    pub(crate) const fn new(codes: &'static [KeyCode], label: &'static str) -> Keys {
        Keys { codes, label }
    }

    /// Enter, called `label`.
    pub(crate) const fn enter(label: &'static str) -> Keys {
        Keys::new(&[KeyCode::Enter], label)
    }
}

/// Cancels a confirmation with a dry run.
pub(crate) const ESC_Q: Keys = Keys::new(&[KeyCode::Esc, KeyCode::Char('q')], "Esc cancel");

/// A confirmation: its text (built when it opens, again when a key
/// changes it), its keys, and the action it confirms.
#[derive(Debug, Clone)]
pub struct Confirm {
    pub title: &'static str,
    pub width: Width,
    /// Above the dry run's verdict (the question).
    pub head: Vec<Line<'static>>,
    /// `Some` when the server's dry run answers before the confirm key
    /// counts.
    pub dry_run: Option<DryRun>,
    /// Below the verdict (what is sent, what is deleted).
    pub body: Vec<Line<'static>>,
    /// `Some` when the count must be typed first.
    pub count: Option<Count>,
    pub yes: Keys,
    pub no: Keys,
    pub extras: Vec<Extra>,
    /// The footer's keys, as drawn.
    pub keys: String,
    /// Said when cancelled (that nothing was sent).
    pub cancelled: Option<String>,
    pub action: Confirmed,
}

impl Confirm {
    pub(crate) fn new(title: &'static str, width: Width, action: Confirmed) -> Confirm {
        Confirm {
            title,
            width,
            head: Vec::new(),
            dry_run: None,
            body: Vec::new(),
            count: None,
            yes: Keys::enter(""),
            no: Keys::new(&[KeyCode::Esc], "Esc cancel"),
            extras: Vec::new(),
            keys: String::new(),
            cancelled: None,
            action,
        }
    }

    /// More than one object: the count is typed before Enter counts.
    pub(crate) fn counted(mut self, n: usize) -> Confirm {
        if n > 1 {
            self.count = Some(Count {
                count: n,
                typed: String::new(),
            });
        }
        self
    }

    /// The footer's keys from the keys offered: confirm, extras, cancel;
    /// while the dry run is asked, only cancel.
    pub(crate) fn settle(&mut self) {
        self.keys = self.keys_text();
    }

    pub(crate) fn settled(mut self) -> Confirm {
        self.settle();
        self
    }

    pub(crate) fn keys_text(&self) -> String {
        if self.waiting() {
            return format!("{} (Enter waits for the dry run)", self.no.label);
        }
        let results = self.results().unwrap_or_default();
        let typing = if self.count.is_some() {
            "type the count, "
        } else {
            ""
        };
        // What a retry could change: sent as it is, a refused object fails again.
        let again = if self.extras.contains(&Extra::RetryDryRun) && results.iter().any(|r| !r.ok())
        {
            " (refused objects fail again)"
        } else {
            ""
        };
        let mut parts = vec![format!("{typing}{}{again}", self.yes.label)];
        parts.extend(
            self.extras
                .iter()
                .filter(|x| x.shown(results))
                .map(|x| format!("{} {}", x.key().0, x.key().1)),
        );
        parts.push(self.no.label.to_string());
        parts.join(" · ")
    }

    /// Whether the server's dry run is asked and has not answered yet.
    pub fn waiting(&self) -> bool {
        self.dry_run.as_ref().is_some_and(|d| d.results.is_none())
    }

    /// The dry run's answer, once it has come.
    pub fn results(&self) -> Option<&[ObjectResult]> {
        self.dry_run.as_ref()?.results.as_deref()
    }

    /// Whether the confirm key may act now (the count typed, if asked).
    pub(crate) fn ready(&self) -> bool {
        self.count
            .as_ref()
            .is_none_or(|c| c.typed.trim() == c.count.to_string())
    }
}

/// The prompt of a confirmation that asks for the count, what is typed
/// after it.
pub(crate) fn count_line(n: &Count, t: Theme) -> Line<'static> {
    Line::from(vec![
        Span::raw(format!("Type {} to confirm: ", n.count)),
        Span::styled(
            format!("{}▏", n.typed),
            t.fg(Color::Yellow).add_modifier(Modifier::BOLD),
        ),
    ])
}

/// The body of a confirmation: the question, the server's verdict (or
/// that it is awaited: `waiting`, drawn with the spinner), what it acts on.
pub(crate) fn confirm_body(
    c: &Confirm,
    waiting: impl FnOnce() -> Line<'static>,
) -> Vec<Line<'static>> {
    let mut body = c.head.clone();
    if let Some(d) = &c.dry_run {
        body.push(Line::from(Span::styled(
            "Server dry run:",
            Style::default().add_modifier(Modifier::BOLD),
        )));
        match d.results {
            None => body.push(waiting()),
            Some(_) => body.extend(d.verdict.iter().cloned()),
        }
    }
    body.extend(c.body.iter().cloned());
    body
}

/// The footer of a confirmation: the count's prompt, then its keys.
pub(crate) fn confirm_footer(c: &Confirm, t: Theme) -> Vec<Line<'static>> {
    c.count
        .iter()
        .map(|n| count_line(n, t))
        .chain([keys_line(&c.keys, t)])
        .collect()
}
