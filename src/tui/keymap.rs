//! The one key table: which key does what in which pane, as data. The key
//! handler looks keys up here; the `?` help, the footer of keys in the
//! status line and the README's key table are all made from it, so they
//! cannot disagree with what the keys do (a test compares the README's
//! table with [`readme_table`]).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Where the keyboard is, outside dialogs (each dialog names its own keys
/// in its footer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    /// The object list has focus.
    List,
    /// The field pane has focus, showing the field table.
    Fields,
    /// The field pane has focus, showing the YAML view.
    Yaml,
}

/// What a key does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Down,
    Up,
    PageDown,
    PageUp,
    Top,
    Bottom,
    SwitchPane,
    OpenFields,
    Mark,
    Include,
    MarkAll,
    UnmarkAll,
    Apply,
    Prune,
    Delete,
    /// Delete and create again what the server refused to update.
    Recreate,
    Export,
    /// The changes view: each distinct change once, with its count.
    Changes,
    Edit,
    Yaml,
    Group,
    Filter,
    Search,
    NextChange,
    PrevChange,
    NextDrift,
    PrevDrift,
    Kept,
    Release,
    /// `--server-side`, on a conflict row: take that field (force it alone).
    Force,
    /// `--server-side`, on a conflict row: leave that field to its manager.
    GiveWay,
    /// Scroll the box under the field table (the selected row whole).
    DetailDown,
    DetailUp,
    Fold,
    LastApplied,
    Reload,
    Log,
    Help,
    Back,
    Quit,
    /// Quits at once, whatever is open (handled before dialogs).
    ForceQuit,
}

/// A key: its code, and whether Ctrl is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub code: KeyCode,
    pub ctrl: bool,
}

const fn k(c: char) -> Key {
    Key {
        code: KeyCode::Char(c),
        ctrl: false,
    }
}

const fn code(code: KeyCode) -> Key {
    Key { code, ctrl: false }
}

/// One row of the table: the keys (each with its action), where they work,
/// how the help and README name them and what they do, and the word the
/// footer shows (`None`: not in the footer).
pub struct Binding {
    pub keys: &'static [(Key, Action)],
    pub panes: &'static [Pane],
    /// The keys as the help and README write them.
    pub label: &'static str,
    pub help: &'static str,
    pub footer: Option<&'static str>,
}

const ALL: &[Pane] = &[Pane::List, Pane::Fields, Pane::Yaml];
const LIST: &[Pane] = &[Pane::List];
const FIELDS: &[Pane] = &[Pane::Fields];

macro_rules! b {
    ($label:expr, $panes:expr, [$(($key:expr, $act:ident)),* $(,)?], $help:expr, $footer:expr) => {
        Binding {
            keys: &[$(($key, Action::$act)),*],
            panes: $panes,
            label: $label,
            help: $help,
            footer: $footer,
        }
    };
}

/// The table, in the order the help and the README list it.
pub const BINDINGS: &[Binding] = &[
    b!(
        "j/k, ↑/↓",
        ALL,
        [
            (k('j'), Down),
            (code(KeyCode::Down), Down),
            (k('k'), Up),
            (code(KeyCode::Up), Up)
        ],
        "move in the focused pane (the YAML view scrolls)",
        None
    ),
    b!(
        "PgUp/PgDn",
        ALL,
        [
            (code(KeyCode::PageDown), PageDown),
            (code(KeyCode::PageUp), PageUp)
        ],
        "a page up / down",
        None
    ),
    b!(
        "g/G, Home/End",
        ALL,
        [
            (k('g'), Top),
            (code(KeyCode::Home), Top),
            (k('G'), Bottom),
            (code(KeyCode::End), Bottom)
        ],
        "first / last",
        None
    ),
    b!(
        "Tab",
        ALL,
        [
            (code(KeyCode::Tab), SwitchPane),
            (code(KeyCode::BackTab), SwitchPane)
        ],
        "switch pane",
        Some("Tab pane")
    ),
    b!(
        "Enter",
        LIST,
        [(code(KeyCode::Enter), OpenFields)],
        "open the field pane",
        Some("Enter fields")
    ),
    b!(
        "Space",
        LIST,
        [(k(' '), Mark)],
        "mark / unmark the object for apply (and delete)",
        Some("Space mark")
    ),
    b!(
        "Space",
        FIELDS,
        [(k(' '), Include)],
        "include / exclude the change (a partial apply)",
        Some("Space include")
    ),
    b!(
        "M/U",
        LIST,
        [(k('M'), MarkAll), (k('U'), UnmarkAll)],
        "mark / unmark every object the filter and search show",
        Some("M mark all")
    ),
    b!(
        "a",
        ALL,
        [(k('a'), Apply)],
        "apply the marked objects (or the current one): shows what is sent and the server dry run; \
         Enter confirms once the dry run has answered, r asks the server again",
        Some("a apply")
    ),
    b!(
        "p",
        ALL,
        [(k('p'), Prune)],
        "prune mode: each candidate with why; y prune, n keep, s skip; then a confirmation with \
         the server's dry run; Enter deletes the queued ones (no candidate: says why)",
        Some("p prune")
    ),
    b!(
        "D",
        ALL,
        [(k('D'), Delete)],
        "delete the current or marked objects (more than one: type the count); c in the dialog \
         cycles propagation Background, Foreground, Orphan",
        None
    ),
    b!(
        "F",
        ALL,
        [(k('F'), Recreate)],
        "recreate an update the server refused as immutable: confirm, then delete and create again",
        Some("F recreate")
    ),
    b!(
        "E",
        ALL,
        [(k('E'), Export)],
        "export an unmanaged object or a prune candidate to a manifest file, then reload",
        None
    ),
    b!(
        "c",
        ALL,
        [(k('c'), Changes)],
        "changes view: each distinct change once; Enter marks every object with it, for it alone",
        None
    ),
    b!(
        "e",
        ALL,
        [(k('e'), Edit)],
        "open the object's manifest in $VISUAL, else $EDITOR, else vi, at its line; reload when \
         the editor exits",
        Some("e edit")
    ),
    b!(
        "y",
        ALL,
        [(k('y'), Yaml)],
        "toggle the YAML diff view",
        Some("y yaml")
    ),
    b!(
        "t",
        ALL,
        [(k('t'), Group)],
        "group by namespace / kind",
        None
    ),
    b!(
        "f",
        ALL,
        [(k('f'), Filter)],
        "cycle filter: all, changes, create, update, in sync, prune, error, warning, conflict, \
         marked",
        Some("f filter")
    ),
    b!(
        "/",
        ALL,
        [(k('/'), Search)],
        "search by name, kind, namespace (incremental; Enter keeps it, Esc clears)",
        Some("/ search")
    ),
    b!(
        "n/N",
        &[Pane::List, Pane::Yaml],
        [(k('n'), NextChange), (k('N'), PrevChange)],
        "next / previous object with changes",
        Some("n next change")
    ),
    b!(
        "n/N",
        FIELDS,
        [(k('n'), NextDrift), (k('N'), PrevDrift)],
        "next / previous row that reverts a drift",
        Some("n next drift")
    ),
    b!(
        "K",
        ALL,
        [(k('K'), Kept)],
        "show / hide the fields apply keeps (server defaults, other writers)",
        None
    ),
    b!(
        "R",
        FIELDS,
        [(k('R'), Release)],
        "on a clear row: release it instead (act column free: apply keeps the live value and \
         drops the field from last-applied); R again clears it",
        Some("R release")
    ),
    b!(
        "T/W",
        FIELDS,
        [(k('T'), Force), (k('W'), GiveWay)],
        "--server-side conflict row: force that field / give way (not sent); again: undo",
        None
    ),
    b!(
        "Ctrl-d/Ctrl-u",
        FIELDS,
        [
            (
                Key {
                    code: KeyCode::Char('d'),
                    ctrl: true
                },
                DetailDown
            ),
            (
                Key {
                    code: KeyCode::Char('u'),
                    ctrl: true
                },
                DetailUp
            )
        ],
        "scroll the box under the table (the selected row whole) down / up",
        None
    ),
    b!(
        "z",
        ALL,
        [(k('z'), Fold)],
        "YAML view: fold / unfold unchanged lines (three lines of context stay)",
        None
    ),
    b!(
        "L",
        ALL,
        [(k('L'), LastApplied)],
        "YAML view: the last-applied annotation whole, as pretty JSON",
        None
    ),
    b!(
        "r",
        ALL,
        [(k('r'), Reload)],
        "reload live state and rebuild the plan (before any live state was read: connect again)",
        Some("r reload")
    ),
    b!(
        "l",
        ALL,
        [(k('l'), Log)],
        "toggle the log (results and server errors)",
        None
    ),
    b!(
        "?",
        ALL,
        [(k('?'), Help)],
        "this help, with the legend of the marks",
        Some("? help")
    ),
    b!(
        "Esc",
        ALL,
        [(code(KeyCode::Esc), Back)],
        "back: clears the search, then the filter, leaves the field pane; never quits",
        Some("Esc back")
    ),
    b!(
        "q",
        ALL,
        [(k('q'), Quit)],
        "quit (asks first when objects are marked or deletes queued)",
        Some("q quit")
    ),
    b!(
        "Ctrl-C",
        ALL,
        [(
            Key {
                code: KeyCode::Char('c'),
                ctrl: true
            },
            ForceQuit
        )],
        "quit at once, whatever is open",
        None
    ),
    b!(
        "in a dialog",
        ALL,
        [],
        "Enter confirms, Esc cancels; a dialog taller than the screen scrolls with j/k, ↑/↓, \
         PgUp/PgDn, Home/End (its footer says which lines show)",
        None
    ),
    b!(
        "mouse",
        ALL,
        [],
        "the wheel scrolls the pane under the pointer (or the open dialog), a click selects",
        None
    ),
];

/// The marks the list and the field table draw, and what each means.
pub const MARKS: &[(&str, &str)] = &[
    ("+", "create"),
    ("~", "update"),
    ("=", "in sync"),
    ("-", "prune candidate"),
    ("x", "queued for deletion"),
    ("!", "error: cannot be applied"),
    (
        "⚠",
        "warnings (the object applies; read them); on a field: a hazard",
    ),
    ("?", "not compared yet (live state loading)"),
    (
        "≠",
        "server-side conflict: another manager owns a field (T/W decide)",
    ),
    ("●", "marked for apply"),
    ("◐", "partial apply: some changes excluded"),
    ("↺", "reverts a drift (changed in the cluster)"),
    ("■ / □", "field change included / excluded"),
];

/// What `key` does in `pane`, if anything.
pub fn action(pane: Pane, key: &KeyEvent) -> Option<Action> {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    BINDINGS
        .iter()
        .filter(|b| b.panes.contains(&pane))
        .flat_map(|b| b.keys.iter())
        .find(|(k, _)| k.code == key.code && k.ctrl == ctrl)
        .map(|(_, a)| *a)
}

/// The footer's keys in `pane`, in table order.
pub fn footer(pane: Pane) -> Vec<&'static str> {
    BINDINGS
        .iter()
        .filter(|b| b.panes.contains(&pane))
        .filter_map(|b| b.footer)
        .collect()
}

/// Where a binding works, in words (the README's second column).
pub fn where_words(panes: &[Pane]) -> &'static str {
    match panes {
        [Pane::List, Pane::Fields, Pane::Yaml] => "everywhere",
        [Pane::List] => "list",
        [Pane::Fields] => "field table",
        [Pane::List, Pane::Yaml] => "list, YAML view",
        _ => "some panes",
    }
}

/// The README's key table, made from [`BINDINGS`] (markdown).
pub fn readme_table() -> String {
    let mut out = String::from("| Key | Where | Action |\n|---|---|---|\n");
    for b in BINDINGS {
        let label = b
            .label
            .split(", ")
            .map(|l| format!("`{l}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let help = b
            .help
            .replace("$VISUAL", "`$VISUAL`")
            .replace("$EDITOR", "`$EDITOR`");
        out.push_str(&format!(
            "| {label} | {} | {help} |\n",
            where_words(b.panes)
        ));
    }
    out.push_str("\nMarks:\n\n| Mark | Meaning |\n|---|---|\n");
    for (m, what) in MARKS {
        out.push_str(&format!("| `{m}` | {what} |\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No key means two things in one pane: the first binding would hide
    /// the other.
    #[test]
    fn each_key_has_one_action_per_pane() {
        for pane in [Pane::List, Pane::Fields, Pane::Yaml] {
            let mut seen: Vec<Key> = Vec::new();
            for b in BINDINGS.iter().filter(|b| b.panes.contains(&pane)) {
                for (key, _) in b.keys {
                    assert!(!seen.contains(key), "{key:?} twice in {pane:?}");
                    seen.push(*key);
                }
            }
        }
    }

    #[test]
    fn keys_are_looked_up_per_pane() {
        let n = KeyEvent::new(KeyCode::Char('n'), KeyModifiers::NONE);
        assert_eq!(action(Pane::List, &n), Some(Action::NextChange));
        assert_eq!(action(Pane::Fields, &n), Some(Action::NextDrift));
        let c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(action(Pane::Yaml, &c), Some(Action::ForceQuit));
        let r = KeyEvent::new(KeyCode::Char('R'), KeyModifiers::SHIFT);
        assert_eq!(action(Pane::List, &r), None);
        assert_eq!(action(Pane::Fields, &r), Some(Action::Release));
    }
}
