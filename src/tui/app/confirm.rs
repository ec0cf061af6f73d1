//! One confirmation for every destructive action, as gitui's ConfirmPopup
//! holds the `Action` it runs: what it asks is data built here, in
//! `update` (never in the view), and what it confirms is a [`Confirmed`]
//! that only the confirm key turns into its [`Effect`]. One view
//! (`dialogs::confirm_view`) draws them all; one key handler
//! ([`App::confirm_key`]) answers y/Enter/n/Esc, the typed count and the
//! extra keys for all of them.

use super::*;
use crate::tui::theme::{Theme, keys_line};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;

/// What a confirmation confirms: each is one [`Effect`] once confirmed.
#[derive(Debug, Clone)]
pub enum Confirmed {
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
    fn run(self) -> (Option<Job>, Effect) {
        match self {
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

    /// Whether it acts on `object` (a change in the cluster withdraws it).
    pub fn touches(&self, object: &ObjectRef) -> bool {
        match self {
            Confirmed::Delete { objects, .. } => objects.iter().any(|o| o.id() == *object),
            Confirmed::Recreate(items) => items.iter().any(|it| it.plan.id() == *object),
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
}

/// An extra key: the key, what the footer calls it, what it does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtraKey {
    pub key: char,
    pub label: &'static str,
    pub does: Extra,
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
    /// The screen's width (less a margin), at most this.
    ScreenUpTo(u16),
}

impl Width {
    pub fn of(self, screen: u16) -> u16 {
        match self {
            Width::Fixed(w) => w,
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

const ENTER: &[KeyCode] = &[KeyCode::Enter];

/// A confirmation: its text (built when it opens, again when a key
/// changes it), its keys, and the action it confirms.
#[derive(Debug, Clone)]
pub struct Confirm {
    pub title: &'static str,
    pub width: Width,
    pub body: Vec<Line<'static>>,
    /// `Some` when the count must be typed first.
    pub count: Option<Count>,
    pub yes: Keys,
    pub no: Keys,
    pub extras: Vec<ExtraKey>,
    /// The footer's keys, as drawn.
    pub keys: String,
    /// Said when cancelled (that nothing was sent).
    pub cancelled: Option<String>,
    pub action: Confirmed,
}

impl Confirm {
    fn new(title: &'static str, width: Width, action: Confirmed) -> Confirm {
        Confirm {
            title,
            width,
            body: Vec::new(),
            count: None,
            yes: Keys {
                codes: ENTER,
                label: "",
            },
            no: Keys {
                codes: &[KeyCode::Esc],
                label: "Esc cancel",
            },
            extras: Vec::new(),
            keys: String::new(),
            cancelled: None,
            action,
        }
    }

    /// More than one object: the count is typed before Enter counts.
    fn counted(mut self, n: usize) -> Confirm {
        if n > 1 {
            self.count = Some(Count {
                count: n,
                typed: String::new(),
            });
        }
        self
    }

    /// The footer's keys from the keys offered: confirm, extras, cancel.
    fn settle(mut self) -> Confirm {
        let typing = if self.count.is_some() {
            "type the count, "
        } else {
            ""
        };
        let mut parts = vec![format!("{typing}{}", self.yes.label)];
        parts.extend(self.extras.iter().map(|x| format!("{} {}", x.key, x.label)));
        parts.push(self.no.label.to_string());
        self.keys = parts.join(" · ");
        self
    }

    /// Whether the confirm key may act now (the count typed, if asked).
    fn ready(&self) -> bool {
        self.count
            .as_ref()
            .is_none_or(|c| c.typed.trim() == c.count.to_string())
    }
}

/// The first line of the delete confirmation (it names the propagation
/// `c` changes).
fn delete_head(objects: &[ObjectPlan], propagation: Propagation, t: Theme) -> Line<'static> {
    Line::from(Span::styled(
        format!(
            "Delete {} object(s) from the cluster (propagation {propagation:?})?",
            objects.len()
        ),
        t.fg(Color::Red).add_modifier(Modifier::BOLD),
    ))
}

/// What deleting an object of this kind for a while means: the downtime a
/// recreate implies, said before it is confirmed.
fn downtime(kind: &str) -> &'static str {
    match kind {
        "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "ReplicationController" => {
            "its pods are deleted with it and started again: nothing runs until the new ones \
             are ready"
        }
        "Job" | "CronJob" => "its pods are deleted with it; it runs again from the start",
        "Pod" => "it stops and starts again (a new IP)",
        "Service" => {
            "it is gone until created again: connections through it fail meanwhile, and it \
             gets a new clusterIP unless the manifest sets one"
        }
        "PersistentVolumeClaim" => {
            "ITS VOLUME IS RELEASED: with the reclaim policy Delete its data is lost"
        }
        "Namespace" => "EVERYTHING IN IT IS DELETED",
        "CustomResourceDefinition" => "EVERY OBJECT OF ITS KINDS IS DELETED",
        _ => "it is gone until created again: what uses it fails meanwhile",
    }
}

/// Whether `path` is the manifest file `object` was read from (then the
/// export replaces only its document; into another file it is added).
pub(crate) fn shares_file(object: &ObjectPlan, path: &str) -> bool {
    let file = |o: &ObjectPlan| {
        o.source
            .as_deref()
            .map(|s| s.rsplit_once(':').map_or(s, |(f, _)| f).to_string())
    };
    file(object).as_deref() == Some(path)
}

impl App {
    /// What the open confirmation confirms, if one is open.
    pub fn confirming(&self) -> Option<&Confirmed> {
        match &self.popup {
            Some(Popup::Confirm(c)) => Some(&c.action),
            _ => None,
        }
    }

    fn theme(&self) -> Theme {
        Theme::of(&self.opts)
    }

    /// `D`: delete these objects (propagation Background until `c`).
    pub(super) fn delete_confirm(&self, objects: Vec<ObjectPlan>) -> Confirm {
        let t = self.theme();
        let propagation = Propagation::Background;
        let mut body = vec![delete_head(&objects, propagation, t)];
        body.extend(
            objects
                .iter()
                .map(|o| Line::from(format!("  x {}", o.id()))),
        );
        let n = objects.len();
        Confirm {
            body,
            yes: Keys {
                codes: ENTER,
                label: "Enter delete",
            },
            extras: vec![ExtraKey {
                key: 'c',
                label: "propagation",
                does: Extra::CyclePropagation,
            }],
            ..Confirm::new(
                "Confirm delete",
                Width::Fixed(70),
                Confirmed::Delete {
                    objects,
                    propagation,
                },
            )
        }
        .counted(n)
        .settle()
    }

    /// `F`: each object deleted (its uid), why the server refused it, the
    /// downtime; then how it is done.
    pub(super) fn recreate_confirm(&self, items: Vec<ApplyItem>) -> Confirm {
        let t = self.theme();
        let red = t.fg(Color::Red).add_modifier(Modifier::BOLD);
        let head = match items.len() {
            1 => "Recreate 1 object: DELETE it and create it again from its manifest?".to_string(),
            n => {
                format!("Recreate {n} objects: DELETE each and create it again from its manifest?")
            }
        };
        let mut body = vec![
            Line::from(Span::styled(head, red)),
            Line::from(
                "The server refuses the update in place (an immutable field); as kubectl apply \
                 --force does, the object is replaced.",
            ),
        ];
        for it in &items {
            let o = &it.plan;
            let uid = o
                .live
                .as_ref()
                .and_then(|l| l.pointer("/metadata/uid"))
                .and_then(Value::as_str)
                .unwrap_or("unknown");
            body.push(Line::from(Span::styled(
                format!("  x {} (uid {uid})", o.id()),
                red,
            )));
            if let Some(why) = self.refused.get(&o.id()) {
                body.push(Line::from(format!("      refused: {why}")));
            }
            body.push(Line::from(Span::styled(
                format!("      downtime: {}", downtime(&o.kind)),
                t.fg(Color::Yellow),
            )));
        }
        body.push(Line::from(Span::styled(
            format!(
                "How: a DELETE with the uid as its precondition (an object made since under that \
                 name is left alone); a wait until it is gone (at most {} s); then the manifest \
                 is created. If that create fails, the object as it was is created again; if \
                 even that fails, it stays DELETED and the log says so. Before Enter, nothing is \
                 sent.",
                crate::ops::RECREATE_WAIT.as_secs()
            ),
            t.fg(Color::DarkGray),
        )));
        let n = items.len();
        Confirm {
            body,
            yes: Keys {
                codes: ENTER,
                label: if n > 1 {
                    "Enter recreate"
                } else {
                    "Enter recreate (delete, then create)"
                },
            },
            no: Keys {
                codes: &[KeyCode::Esc, KeyCode::Char('q'), KeyCode::Char('n')],
                label: "Esc cancel",
            },
            cancelled: Some("recreate cancelled: nothing was sent".to_string()),
            ..Confirm::new(
                "Confirm recreate",
                Width::ScreenUpTo(110),
                Confirmed::Recreate(items),
            )
        }
        .counted(n)
        .settle()
    }

    /// The export's path exists: `y` writes into it; `changes` (a diff,
    /// when known) is what that changes in the file.
    pub(super) fn export_confirm(
        &self,
        object: ObjectPlan,
        path: String,
        changes: Vec<String>,
    ) -> Confirm {
        let t = self.theme();
        let how = if shares_file(&object, &path) {
            format!(
                "y replaces the document of {} in it with the live object (its pending change \
                 there is lost); the comments heading it and the file's other documents stay.",
                object.id()
            )
        } else {
            format!(
                "y adds the export of {} at its end as a document of its own; nothing in it is \
                 replaced.",
                object.id()
            )
        };
        let mut body = vec![
            Line::from(Span::styled(
                format!("{path} exists."),
                t.fg(Color::Red).add_modifier(Modifier::BOLD),
            )),
            Line::from(how),
        ];
        if !changes.is_empty() {
            body.push(Line::from("What changes in it:"));
        }
        // The lines the write changes, as a diff: red gone, green added.
        body.extend(changes.into_iter().map(|c| {
            let style = match c.chars().next() {
                Some('-') => t.fg(Color::Red),
                Some('+') => t.fg(Color::Green),
                _ => t.fg(Color::DarkGray),
            };
            Line::from(Span::styled(c, style))
        }));
        Confirm {
            body,
            yes: Keys {
                codes: &[KeyCode::Char('y')],
                label: "y write into it",
            },
            no: Keys {
                codes: &[KeyCode::Esc, KeyCode::Char('n'), KeyCode::Char('q')],
                label: "n/Esc keep the file as it is",
            },
            cancelled: Some(format!("export cancelled: {path} left as it was")),
            ..Confirm::new(
                "File exists",
                Width::Fixed(80),
                Confirmed::Export {
                    object: Box::new(object),
                    path,
                },
            )
        }
        .settle()
    }

    /// `q` with marks or queued deletes, or while a recreate runs.
    pub(super) fn quit_confirm(&self, marked: usize, queued: usize, recreating: bool) -> Confirm {
        let t = self.theme();
        let body = if recreating {
            let mut body = vec![
                Line::from(Span::styled(
                    "A recreate is under way: quit anyway?",
                    t.fg(Color::Red).add_modifier(Modifier::BOLD),
                )),
                Line::from(
                    "Quitting between its delete and its create leaves the object deleted; \
                     the log says what is done once it ends.",
                ),
            ];
            if marked + queued > 0 {
                body.push(Line::from(format!(
                    "{marked} mark(s) and {queued} queued delete(s) are dropped too."
                )));
            }
            body
        } else {
            let mut what = Vec::new();
            if marked > 0 {
                what.push(format!("{marked} object(s) marked for apply"));
            }
            if queued > 0 {
                what.push(format!("{queued} prune delete(s) queued"));
            }
            vec![
                Line::from(Span::styled(
                    format!("Quit kapply? {} are dropped.", what.join(" and ")),
                    Style::default().add_modifier(Modifier::BOLD),
                )),
                Line::from("Nothing has been sent for them."),
            ]
        };
        Confirm {
            body,
            yes: Keys {
                codes: &[KeyCode::Char('y'), KeyCode::Char('q'), KeyCode::Enter],
                label: "y/q/Enter quit",
            },
            no: Keys {
                codes: &[KeyCode::Esc, KeyCode::Char('n')],
                label: "n/Esc stay",
            },
            ..Confirm::new("Quit?", Width::Fixed(60), Confirmed::Quit)
        }
        .settle()
    }

    /// Every confirmation's keys: the confirm keys run its action (once
    /// the count is typed), the cancel keys close it, digits type the
    /// count, its extra keys do what they say; anything else leaves it
    /// open.
    pub(super) fn confirm_key(&mut self, k: KeyEvent, mut c: Confirm) -> Vec<Effect> {
        if c.yes.codes.contains(&k.code) {
            if c.ready() {
                let (job, effect) = c.action.run();
                self.jobs.pending.extend(job);
                return vec![effect];
            }
        } else if c.no.codes.contains(&k.code) {
            if let Some(note) = c.cancelled {
                self.say(note, false);
            }
            return Vec::new();
        } else if let (Some(n), KeyCode::Backspace) = (&mut c.count, k.code) {
            n.typed.pop();
        } else if let (Some(n), KeyCode::Char(d)) = (&mut c.count, k.code)
            && d.is_ascii_digit()
        {
            n.typed.push(d);
        } else if let KeyCode::Char(key) = k.code
            && let Some(x) = c.extras.iter().find(|x| x.key == key)
        {
            match x.does {
                Extra::CyclePropagation => {
                    if let Confirmed::Delete {
                        objects,
                        propagation,
                    } = &mut c.action
                    {
                        *propagation = propagation.next();
                        let head = delete_head(objects, *propagation, self.theme());
                        if let Some(first) = c.body.first_mut() {
                            *first = head;
                        }
                    }
                }
            }
        }
        self.popup = Some(Popup::Confirm(c));
        Vec::new()
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

/// The footer of a confirmation: the count's prompt, then its keys.
pub(crate) fn confirm_footer(c: &Confirm, t: Theme) -> Vec<Line<'static>> {
    c.count
        .iter()
        .map(|n| count_line(n, t))
        .chain([keys_line(&c.keys, t)])
        .collect()
}
