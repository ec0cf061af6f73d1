//! The layering the compiler cannot say. The core (`crates/kapply-core`) and
//! the embedded server (`crates/kapply-apiserver`) are crates of their own,
//! so the compiler refuses a core module that names tokio, kube, hyper,
//! ratatui, crossterm or clap as long as the core's `Cargo.toml` does not
//! list them; these tests check that list, that the core opens no socket
//! and runs no process, that one module reads YAML, and which parts of the
//! core the server may use. Each failure names file and line.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const FORBIDDEN: [&str; 6] = ["tokio", "kube", "hyper", "ratatui", "crossterm", "clap"];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        let mut entries: Vec<_> = std::fs::read_dir(path)
            .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
            .map(|e| e.expect("directory entry").path())
            .collect();
        entries.sort();
        for entry in entries {
            rust_files(&entry, out);
        }
    } else if path.extension().is_some_and(|e| e == "rs") {
        out.push(path.to_path_buf());
    }
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Every (line number, crate) where `source` uses a forbidden crate: `use
/// krate`, `extern crate krate`, or a path `krate::…` (also `::krate::…`).
/// Comments are skipped; a crate-relative path such as `crate::x::kube::y`
/// is not a use of the crate. Words like `kubectl` or `kube-system` do not match.
fn violations(source: &str) -> Vec<(usize, &'static str)> {
    crate_uses(source, &FORBIDDEN)
}

/// `source` line by line with comments blanked out (string contents rarely
/// contain `krate::`, and a false alarm here is cheap to fix).
fn code_lines(source: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut in_block_comment = false;
    for raw in source.lines() {
        let mut line = String::new();
        let mut rest = raw;
        loop {
            if in_block_comment {
                match rest.find("*/") {
                    Some(end) => {
                        rest = &rest[end + 2..];
                        in_block_comment = false;
                    }
                    None => break,
                }
            } else {
                let block = rest.find("/*");
                let slash = rest.find("//");
                match (block, slash) {
                    (Some(b), s) if s.is_none_or(|s| b < s) => {
                        line.push_str(&rest[..b]);
                        rest = &rest[b + 2..];
                        in_block_comment = true;
                    }
                    (_, Some(s)) => {
                        line.push_str(&rest[..s]);
                        break;
                    }
                    _ => {
                        line.push_str(rest);
                        break;
                    }
                }
            }
        }
        lines.push(line);
    }
    lines
}

/// Every (line number, crate) where `source` uses one of `crates`: `use
/// krate`, `extern crate krate`, or a path `krate::…` (also `::krate::…`).
fn crate_uses(source: &str, crates: &[&'static str]) -> Vec<(usize, &'static str)> {
    let mut found = Vec::new();
    for (index, line) in code_lines(source).iter().enumerate() {
        for &krate in crates {
            let mut from = 0;
            while let Some(pos) = line[from..].find(krate) {
                let start = from + pos;
                let end = start + krate.len();
                from = end;
                let before = &line[..start];
                let after = &line[end..];
                if before.chars().next_back().is_some_and(is_ident)
                    || after.chars().next().is_some_and(is_ident)
                {
                    continue;
                }
                let trimmed = before.trim_end();
                // `foo::kube::x` is a path inside something else (unless
                // it is the leading `::kube`).
                let inside_path = trimmed.ends_with("::")
                    && trimmed[..trimmed.len() - 2]
                        .chars()
                        .next_back()
                        .is_some_and(is_ident);
                let imported = trimmed.ends_with("use")
                    || trimmed.ends_with("extern crate")
                    || trimmed.ends_with('{') && trimmed.contains("use ");
                if (after.trim_start().starts_with("::") && !inside_path) || imported {
                    found.push((index + 1, krate));
                }
            }
        }
    }
    found
}

/// The dependency names of a `Cargo.toml` section (`[dependencies]`,
/// `[dev-dependencies]`, ...): the key before `=` of each line until the
/// next section.
fn dependency_names(manifest: &str, section: &str) -> Vec<(usize, String)> {
    let mut names = Vec::new();
    let mut inside = false;
    for (index, line) in manifest.lines().enumerate() {
        let line = line.trim();
        if line.starts_with('[') {
            inside = line == section;
        } else if inside
            && !line.starts_with('#')
            && let Some((name, _)) = line.split_once('=')
        {
            names.push((index + 1, name.trim().replace('-', "_")));
        }
    }
    names
}

#[test]
fn the_core_lists_no_runtime_ui_or_cli_crate() {
    let path = root().join("crates/kapply-core/Cargo.toml");
    let manifest = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let mut problems = Vec::new();
    let mut listed = 0;
    for section in [
        "[dependencies]",
        "[dev-dependencies]",
        "[build-dependencies]",
    ] {
        for (line, name) in dependency_names(&manifest, section) {
            listed += 1;
            if FORBIDDEN
                .iter()
                .any(|f| name == *f || name.starts_with(&format!("{f}_")))
            {
                problems.push(format!(
                    "crates/kapply-core/Cargo.toml:{line}: {section} {name}"
                ));
            }
        }
    }
    assert!(
        listed > 3,
        "found only {listed} dependencies: is the section parsing right?"
    );
    assert!(
        problems.is_empty(),
        "the core must not depend on tokio, kube, hyper, ratatui, crossterm or clap \
         (move the code to the app: cluster/, tui/, cli/):\n{}",
        problems.join("\n")
    );
}

/// What the core does outside its tests, beyond reading manifest files:
/// nothing. A socket or a child process would make it I/O bound and
/// untestable without a cluster; the app's `cluster` and `ops` do those.
const CORE_IO: [&str; 4] = ["std::net", "std::process", "TcpStream", "UdpSocket"];

#[test]
fn the_core_opens_no_socket_and_runs_no_process() {
    let mut files = Vec::new();
    rust_files(&root().join("crates/kapply-core/src"), &mut files);
    assert!(files.len() > 20, "found only {files:?}");
    let mut problems = Vec::new();
    for file in &files {
        let source = std::fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
        for (line, what) in io_uses(&source) {
            let shown = file.strip_prefix(root()).unwrap_or(file);
            problems.push(format!("{}:{line}: {what}", shown.display()));
        }
    }
    assert!(
        problems.is_empty(),
        "the core does no network or process I/O (tests aside):\n{}",
        problems.join("\n")
    );
}

/// Every (line, what) where `source`'s code before its first
/// `#[cfg(test)]` names one of [`CORE_IO`] (comments skipped).
fn io_uses(source: &str) -> Vec<(usize, &'static str)> {
    let mut found = Vec::new();
    for (index, line) in code_lines(source).iter().enumerate() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        for what in CORE_IO {
            if line.contains(what) {
                found.push((index + 1, what));
            }
        }
    }
    found
}

/// The checker itself: it must catch each form and ignore look-alikes.
#[test]
fn checker_flags_imports_and_paths_but_not_lookalikes() {
    let bad = "use tokio::sync::mpsc;\n\
               fn f() { let _ = kube::Client::try_default(); }\n\
               use {serde, ratatui::text::Line};\n\
               extern crate crossterm;\n\
               type B = ::hyper::body::Incoming;\n\
               use kube;\n";
    assert_eq!(
        violations(bad),
        vec![
            (1, "tokio"),
            (2, "kube"),
            (3, "ratatui"),
            (4, "crossterm"),
            (5, "hyper"),
            (6, "kube"),
        ]
    );
    let fine = "// use tokio::spawn; kube::Api\n\
                /* ratatui::Frame\n crossterm::event */ let ns = \"kube-system\";\n\
                let kubectl = 1; let kubeconfig = kubectl;\n\
                use crate::cluster::kube::Thing;\n\
                let hyperlink = \"tokio\";\n";
    assert_eq!(violations(fine), vec![]);
}

/// The YAML crates. Only the core's `yaml.rs` may use them: it reads YAML as
/// kubectl and kube-apiserver do (go-yaml's YAML 1.1 rules, every field's
/// line), and a second reader would disagree with it on `yes`, `0755` and
/// the like.
const YAML_CRATES: [&str; 6] = [
    "saphyr",
    "saphyr_parser",
    "serde_saphyr",
    "serde_yaml",
    "yaml_rust",
    "yaml_rust2",
];

#[test]
fn only_the_yaml_module_reads_yaml() {
    let root = root();
    let mut files = Vec::new();
    for dir in [
        "src",
        "crates/kapply-core/src",
        "crates/kapply-apiserver/src",
        "tests",
        "benches",
        "examples",
    ] {
        let path = root.join(dir);
        if path.exists() {
            rust_files(&path, &mut files);
        }
    }
    // This file names the crates it looks for.
    let allowed = [
        root.join("crates/kapply-core/src/yaml.rs"),
        root.join("tests/layering.rs"),
    ];
    assert!(files.contains(&allowed[0]), "the core's yaml.rs is missing");
    let mut problems = Vec::new();
    for file in files.iter().filter(|f| !allowed.contains(f)) {
        let source = std::fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
        for (line, krate) in crate_uses(&source, &YAML_CRATES) {
            let shown = file.strip_prefix(root).unwrap_or(file);
            problems.push(format!(
                "{}:{line}: uses `{krate}` ({})",
                shown.display(),
                source.lines().nth(line - 1).unwrap_or("").trim()
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "only the core's yaml.rs reads YAML; use kapply::yaml (read_value, parse) instead:\n{}",
        problems.join("\n")
    );
}

/// What the embedded server may use of the core: the defaulting
/// and patch metadata it shares with export, YAML reading, and patch
/// application as kube-apiserver does it (`merge::apply`), and the shared
/// vocabulary: Go's spellings of values (`gocompat`: base64 bytes,
/// timestamps), the managedFields format (`managedfields`: reading and
/// writing FieldsV1; who owns what stays the server's own judgement), how group, version and kind are joined (`objref`),
/// apimachinery's label selector grammar (`selector`) and what a resource
/// type is (`resource`: group, version, plural, scope), facts of the wire
/// rather than judgements. Never the client's planning (`plan`,
/// `merge`'s three-way merge and hazards): the server is the independent
/// judge the client is tested against.
const SERVER_MAY_USE: &[&str] = &[
    "defaults",
    "patchmeta",
    "yaml",
    "merge::apply",
    "gocompat",
    "managedfields",
    "objref",
    "selector",
    "resource",
];

/// Every (line number, path) where `source` names a `kapply_core::` path
/// outside `allowed` (a grouped `kapply_core::{…}` import counts as outside:
/// write one `use` per module so it can be checked).
fn core_paths_outside(source: &str, allowed: &[&str]) -> Vec<(usize, String)> {
    const CORE: &str = "kapply_core::";
    let mut found = Vec::new();
    for (index, line) in code_lines(source).iter().enumerate() {
        let mut from = 0;
        while let Some(pos) = line[from..].find(CORE) {
            let start = from + pos;
            from = start + CORE.len();
            if line[..start].chars().next_back().is_some_and(is_ident) {
                continue;
            }
            let path: String = line[from..]
                .chars()
                .take_while(|c| is_ident(*c) || *c == ':' || *c == '{')
                .collect();
            let ok = allowed.iter().any(|a| {
                path == *a
                    || path
                        .strip_prefix(a)
                        .is_some_and(|rest| rest.starts_with("::") || rest.is_empty())
            });
            if !ok {
                found.push((index + 1, path));
            }
        }
    }
    found
}

#[test]
fn the_server_uses_nothing_of_the_clients_planning() {
    let root = root();
    let mut files = Vec::new();
    rust_files(&root.join("crates/kapply-apiserver/src"), &mut files);
    assert!(files.len() > 5, "found only {files:?}");
    let mut problems = Vec::new();
    for file in &files {
        let source = std::fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
        for (line, path) in core_paths_outside(&source, SERVER_MAY_USE) {
            let shown = file.strip_prefix(root).unwrap_or(file);
            problems.push(format!("{}:{line}: kapply_core::{path}", shown.display()));
        }
    }
    assert!(
        problems.is_empty(),
        "the server may use only kapply_core::{{{}}}; it judges the client \
         independently:\n{}",
        SERVER_MAY_USE.join(", "),
        problems.join("\n")
    );
}

/// The two checkers above catch what they look for and nothing else.
#[test]
fn yaml_and_server_checkers_flag_only_what_they_should() {
    let bad = "use serde_saphyr::from_str;\n\
               let v: Value = saphyr_parser::Parser::new_from_str(t);\n";
    assert_eq!(
        crate_uses(bad, &YAML_CRATES),
        vec![(1, "serde_saphyr"), (2, "saphyr_parser")]
    );
    let fine = "// serde_saphyr::from_str\nlet saphyr_like = 1; kapply::yaml::read_value(t);\n";
    assert_eq!(crate_uses(fine, &YAML_CRATES), vec![]);

    let server = "use kapply_core::merge::apply::apply_merge;\n\
                  use kapply_core::merge::hazards;\n\
                  use kapply_core::plan::ObjectPlan;\n\
                  use kapply_core::{defaults, plan};\n\
                  use crate::store::State; let x = kapply_core::yaml::read_value(t);\n\
                  use kapply_core::patchmeta; // kapply_core::plan\n";
    assert_eq!(
        core_paths_outside(server, SERVER_MAY_USE),
        vec![
            (2, "merge::hazards".to_string()),
            (3, "plan::ObjectPlan".to_string()),
            (4, "{defaults".to_string()),
        ]
    );
}

/// The modules of `src/tui` a source (its code before any `#[cfg(test)]`)
/// names: `crate::tui::X`, or from a file of `src/tui` itself `super::X`,
/// or from one a level down (`app/`, `ui/`) `super::super::X`.
fn tui_modules_named(source: &str, depth: usize) -> BTreeSet<String> {
    let code = code_lines(source);
    let end = code
        .iter()
        .position(|l| l.trim_start().starts_with("#[cfg(test)]"))
        .unwrap_or(code.len());
    let supers = "super::".repeat(depth);
    let mut out = BTreeSet::new();
    for line in &code[..end] {
        for prefix in ["crate::tui::", supers.as_str()] {
            let mut rest = line.as_str();
            while let Some(at) = rest.find(prefix) {
                // Not the tail of a longer path (`super::super::` seen
                // as `super::` from a deeper file).
                let before = &rest[..at];
                let tail = &rest[at + prefix.len()..];
                rest = tail;
                if before.ends_with("::") || before.ends_with(|c: char| is_ident(c)) {
                    continue;
                }
                // `super::{a, b}` and `crate::tui::{a, b}` name several.
                let names: Vec<&str> = match tail.strip_prefix('{') {
                    Some(group) => group
                        .split('}')
                        .next()
                        .unwrap_or_default()
                        .split(',')
                        .map(|n| n.trim().split("::").next().unwrap_or_default())
                        .collect(),
                    None => vec![
                        tail.split(|c: char| !is_ident(c))
                            .next()
                            .unwrap_or_default(),
                    ],
                };
                out.extend(
                    names
                        .into_iter()
                        .filter(|n| !n.is_empty() && *n != "super" && *n != "self")
                        .map(String::from),
                );
            }
        }
    }
    out
}

/// The module graph of `src/tui` (a file `X.rs` or a directory `X/` is one
/// module `X`): which modules each one names outside its tests.
fn tui_graph(files: &[(String, usize, String)]) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let known: BTreeSet<&str> = files.iter().map(|(m, _, _)| m.as_str()).collect();
    for (module, depth, source) in files {
        let named = tui_modules_named(source, *depth);
        let entry = graph.entry(module.clone()).or_default();
        entry.extend(
            named
                .into_iter()
                .filter(|n| n != module && known.contains(n.as_str())),
        );
    }
    graph
}

/// A cycle of `graph`, as the modules on it in order, if there is one.
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        at: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|m| m == at) {
            let mut cycle = path[start..].to_vec();
            cycle.push(at.to_string());
            return Some(cycle);
        }
        if done.contains(at) {
            return None;
        }
        path.push(at.to_string());
        for next in graph.get(at).into_iter().flatten() {
            if let Some(c) = visit(next, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(at.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|m| visit(m, graph, &mut Vec::new(), &mut done))
}

/// Issue 28: the TUI's modules form no cycle (imports go one way: `ui` and
/// the runtime use `app`, which uses the state types and the helpers).
#[test]
fn the_tuis_modules_form_no_cycle() {
    let dir = root().join("src/tui");
    let mut files = Vec::new();
    let mut all = Vec::new();
    rust_files(&dir, &mut all);
    for path in all {
        let rel = path.strip_prefix(&dir).expect("under src/tui");
        let parts: Vec<String> = rel
            .iter()
            .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
            .collect();
        if parts == ["mod"] {
            continue;
        }
        let source = std::fs::read_to_string(&path).expect("read");
        files.push((parts[0].clone(), parts.len(), source));
    }
    let graph = tui_graph(&files);
    assert!(graph.len() > 10, "{graph:?}");
    assert!(
        graph["ui"].contains("app") && graph["app"].contains("state"),
        "the graph is read: {graph:?}"
    );
    if let Some(c) = cycle(&graph) {
        panic!("src/tui has an import cycle: {}", c.join(" -> "));
    }
}

#[test]
fn the_cycle_checker_finds_a_planted_cycle() {
    let files = [
        (
            "state".to_string(),
            1,
            "use crate::tui::confirm::Confirm;\n".to_string(),
        ),
        (
            "confirm".to_string(),
            1,
            "use super::{theme, state::Job};\n#[cfg(test)]\nuse crate::tui::app;".to_string(),
        ),
        ("theme".to_string(), 1, String::new()),
        (
            "app".to_string(),
            2,
            "use super::super::state;\n".to_string(),
        ),
    ];
    let graph = tui_graph(&files);
    assert_eq!(
        cycle(&graph),
        Some(vec!["state".into(), "confirm".into(), "state".into()])
    );
    assert!(!graph["confirm"].contains("app"), "tests are left out");
    assert!(graph["app"].contains("state"));
    let acyclic = tui_graph(&files[2..]);
    assert_eq!(cycle(&acyclic), None);
}
