//! The core modules (`objref`, `selector`, `yaml`, `manifest`, `patchmeta`,
//! `merge`, `plan`, `defaults`, `export`, `fieldpath`, `gocompat`, `vocab`,
//! `mask`, `managedfields`, `resource`, `jsonread`, `ssa`) stay
//! free of the runtime, UI and command-line crates, so they can be reasoned about and tested
//! without a cluster or a terminal. This reads their source and fails, naming
//! file and line, when one of them imports or names a forbidden crate.

use std::path::{Path, PathBuf};

const FORBIDDEN: [&str; 6] = ["tokio", "kube", "hyper", "ratatui", "crossterm", "clap"];

/// Core module files, relative to the crate root; directories are walked.
const CORE: &[&str] = &[
    "src/objref.rs",
    "src/selector.rs",
    "src/yaml.rs",
    "src/yaml",
    "src/jsonread.rs",
    "src/manifest.rs",
    "src/patchmeta.rs",
    "src/merge",
    "src/plan",
    "src/defaults.rs",
    "src/export.rs",
    "src/fieldpath.rs",
    "src/resource.rs",
    "src/gocompat.rs",
    "src/vocab.rs",
    "src/mask.rs",
    "src/managedfields.rs",
    "src/ssa.rs",
];

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

#[test]
fn core_modules_import_no_runtime_or_ui_crate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for entry in CORE {
        let path = root.join(entry);
        assert!(path.exists(), "core module {entry} is missing: update CORE");
        rust_files(&path, &mut files);
    }
    assert!(files.len() >= CORE.len(), "found only {files:?}");
    let mut problems = Vec::new();
    for file in &files {
        let source = std::fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
        for (line, krate) in violations(&source) {
            let shown = file.strip_prefix(root).unwrap_or(file);
            problems.push(format!(
                "{}:{line}: core module uses `{krate}` ({})",
                shown.display(),
                source.lines().nth(line - 1).unwrap_or("").trim()
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "core modules must not depend on tokio, kube, hyper, ratatui or crossterm \
         (move the code to cluster/, server/ or tui/):\n{}",
        problems.join("\n")
    );
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

/// The YAML crates. Only `src/yaml.rs` may use them: it reads YAML as
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
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "tests", "benches", "examples"] {
        let path = root.join(dir);
        if path.exists() {
            rust_files(&path, &mut files);
        }
    }
    // This file names the crates it looks for.
    let allowed = [root.join("src/yaml.rs"), root.join("tests/layering.rs")];
    assert!(files.contains(&allowed[0]), "src/yaml.rs is missing");
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
        "only src/yaml.rs reads YAML; use kapply::yaml (read_value, parse) instead:\n{}",
        problems.join("\n")
    );
}

/// What the embedded server may use of the crate: itself, the defaulting
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
    "server",
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

/// Every (line number, path) where `source` names a `crate::` path outside
/// `allowed` (a grouped `crate::{…}` import counts as outside: write one
/// `use` per module so it can be checked).
fn crate_paths_outside(source: &str, allowed: &[&str]) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (index, line) in code_lines(source).iter().enumerate() {
        let mut from = 0;
        while let Some(pos) = line[from..].find("crate::") {
            let start = from + pos;
            from = start + "crate::".len();
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
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src/server"), &mut files);
    assert!(files.len() > 5, "found only {files:?}");
    let mut problems = Vec::new();
    for file in &files {
        let source = std::fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
        for (line, path) in crate_paths_outside(&source, SERVER_MAY_USE) {
            let shown = file.strip_prefix(root).unwrap_or(file);
            problems.push(format!("{}:{line}: crate::{path}", shown.display()));
        }
    }
    assert!(
        problems.is_empty(),
        "src/server may use only crate::{{{}}}; the server judges the client \
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

    let server = "use crate::merge::apply::apply_merge;\n\
                  use crate::merge::hazards;\n\
                  use crate::plan::ObjectPlan;\n\
                  use crate::{defaults, plan};\n\
                  use crate::server::store::State; let x = crate::yaml::read_value(t);\n\
                  use crate::patchmeta; // crate::cluster\n";
    assert_eq!(
        crate_paths_outside(server, SERVER_MAY_USE),
        vec![
            (2, "merge::hazards".to_string()),
            (3, "plan::ObjectPlan".to_string()),
            (4, "{defaults".to_string()),
        ]
    );
}
