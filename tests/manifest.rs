//! Manifest loading against the fixtures in tests/fixtures/manifests.

#[path = "common/kubectl.rs"]
mod kubectl;

use kapply::manifest::{self, LoadOptions, ManifestError};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/manifests")
        .join(rel)
}

fn opts(paths: &[&str]) -> LoadOptions {
    LoadOptions {
        paths: paths.iter().map(|p| fixture(p)).collect(),
        ..Default::default()
    }
}

/// Loads and checks that nothing failed.
fn load_ok(opts: &LoadOptions) -> manifest::Loaded {
    let l = manifest::load(opts);
    assert!(l.errors.is_empty(), "{:?}", l.errors);
    l
}

fn names(l: &manifest::Loaded) -> Vec<String> {
    l.manifests.iter().map(|m| m.id.to_string()).collect()
}

fn at(file: &str, line: usize) -> String {
    format!("{}:{line}", fixture(file).display())
}

#[test]
fn directory_in_lexical_order_with_lists_json_and_empty_documents() {
    let l = load_ok(&opts(&["basic"]));
    assert_eq!(
        names(&l),
        [
            "Namespace demo",
            "Deployment demo/nginx",
            "Service default/nginx",
            "ConfigMap default/list-a",
            "ConfigMap demo/list-b",
            "ConfigMap default/from-json",
        ]
    );
    let src: Vec<String> = l.manifests.iter().map(|m| m.source.to_string()).collect();
    assert_eq!(
        src,
        [
            at("basic/01-namespace.yaml", 1),
            at("basic/02-app.yaml", 6),
            at("basic/02-app.yaml", 28),
            at("basic/03-list.yaml", 4),
            at("basic/03-list.yaml", 10),
            at("basic/04-config.json", 2),
        ]
    );
    // List items are objects of their own, with YAML 1.1 scalars.
    assert_eq!(l.manifests[3].object()["data"]["enabled"], json!(true));
    assert_eq!(l.manifests[3].lines["data.enabled"], 9);
    // JSON keeps its strings and has lines too.
    assert_eq!(
        l.manifests[5].object()["data"],
        json!({"answer": "yes", "mode": "0644"})
    );
    assert_eq!(l.manifests[5].lines["data.mode"], 9);
    // Namespaced objects get the namespace filled in, cluster-scoped do not.
    assert_eq!(
        l.manifests[2].object()["metadata"],
        json!({"name": "nginx", "namespace": "default"})
    );
    assert_eq!(l.manifests[0].object()["metadata"], json!({"name": "demo"}));
    assert_eq!(l.manifests[1].api_version(), "apps/v1");
    assert_eq!(l.manifests[1].id.group, "apps");
}

#[test]
fn recursive_descends_at_the_directory_place() {
    let mut o = opts(&["basic"]);
    o.recursive = true;
    let l = load_ok(&o);
    assert_eq!(
        names(&l),
        [
            "Namespace demo",
            "Deployment demo/nginx",
            "Service default/nginx",
            "ConfigMap default/list-a",
            "ConfigMap demo/list-b",
            "ConfigMap default/deepest",
            "ConfigMap default/nested",
            "ConfigMap default/from-json",
        ]
    );
}

#[test]
fn explicit_files_are_read_whatever_their_extension_and_paths_repeat() {
    let l = load_ok(&opts(&["basic/05-notes.txt", "basic/01-namespace.yaml"]));
    assert_eq!(names(&l), ["ConfigMap default/ignored", "Namespace demo"]);
}

#[test]
fn yaml_1_1_scalars_as_kubectl_reads_them() {
    let l = load_ok(&opts(&["scalars.yaml"]));
    let object = l.manifests[0].object();
    let data = &object["data"];
    assert_eq!(data["yes-plain"], json!(true));
    assert_eq!(data["no-plain"], json!(false));
    assert_eq!(data["yes-quoted"], json!("yes"));
    assert_eq!(data["octal"], json!(420));
    assert_eq!(data["octal-quoted"], json!("0644"));
    assert_eq!(data["hex"], json!(31));
    assert_eq!(data["integral-float"], json!(1));
    assert_eq!(data["tilde"], Value::Null);
    assert_eq!(data["true"], json!("key-y"), "`y:` is the key \"true\"");
    assert_eq!(data["false"], json!("key-n"));
    assert_eq!(data["420"], json!("octal-key"));
    assert_eq!(data["tagged-str"], json!("0644"));
    // The line of a resolved key is the line of the key as written.
    assert_eq!(l.manifests[0].lines["data.true"], 32);
}

/// kubectl itself reads the same files the same way (`patch --local` is
/// offline and prints what kubectl parsed).
#[test]
fn scalars_match_kubectl() {
    for name in ["scalars.yaml", "numbers.json"] {
        let file = fixture(name);
        let Some(theirs) = kubectl_reads(&file) else {
            return;
        };
        let theirs = theirs.unwrap_or_else(|e| panic!("{name}: {e}"));
        let text = std::fs::read_to_string(&file).unwrap();
        let ours = kapply::yaml::parse(&text).unwrap()[0].to_value();
        assert_eq!(ours, theirs, "{name}");
    }
}

#[test]
fn json_fields_have_lines() {
    let l = load_ok(&opts(&["numbers.json"]));
    let m = &l.manifests[0];
    assert_eq!(m.source.line, 1);
    assert_eq!(m.lines["data.big"], 2);
    assert_eq!(m.lines["data.nested[1].x"], 3);
    assert_eq!(m.lines["data.unicode"], 3);
    assert_eq!(m.object()["data"]["one"], json!(1));
}

#[test]
fn line_map_names_keyed_elements() {
    let l = load_ok(&opts(&["lines/deploy.yaml"]));
    let lines = &l.manifests[0].lines;
    let expect = [
        ("metadata.name", 4),
        ("metadata.annotations[\"example.com/owner\"]", 6),
        ("spec.template.spec.containers[name=sidecar].image", 12),
        ("spec.template.spec.containers[name=nginx]", 13),
        ("spec.template.spec.containers[name=nginx].image", 14),
        ("spec.template.spec.containers[name=nginx].args[1]", 15),
        (
            "spec.template.spec.containers[name=nginx].ports[containerPort=80].protocol",
            18,
        ),
        // tolerations have no merge key: indexed.
        ("spec.template.spec.tolerations[0].operator", 21),
    ];
    for (path, line) in expect {
        assert_eq!(lines.get(path), Some(&line), "{path}");
    }
    // The filled-in namespace was not written, so it has no line.
    assert!(!lines.contains_key("metadata.namespace"));
}

#[test]
fn errors_name_file_and_line_and_the_rest_still_loads() {
    let l = manifest::load(&opts(&["errors"]));
    let errs: Vec<String> = l.errors.iter().map(ToString::to_string).collect();
    // Nothing from the file with a syntax error, not even the documents
    // before it.
    assert!(
        l.manifests
            .iter()
            .all(|m| !m.source.file.ends_with("a-syntax.yaml")),
        "{:?}",
        names(&l)
    );
    assert!(
        matches!(&l.errors[0], ManifestError::Parse { at, .. }
            if at.file.ends_with("a-syntax.yaml") && (15..=16).contains(&at.line)),
        "{errs:?}"
    );
    assert!(
        errs[0].contains("no object from this file is loaded"),
        "{errs:?}"
    );
    let expected = [
        format!("{}: missing apiVersion", at("errors/b-missing.yaml", 1)),
        format!("{}: missing kind", at("errors/b-missing.yaml", 5)),
        format!("{}: missing metadata.name", at("errors/b-missing.yaml", 11)),
        format!(
            "{}: Pod with metadata.generateName \"worker-\": apply needs metadata.name (generateName is not supported)",
            at("errors/b-missing.yaml", 18)
        ),
        format!(
            "{}: ConfigMap default/dup is defined more than once (also at {})",
            at("errors/c-dup.yaml", 6),
            at("errors/b-missing.yaml", 25)
        ),
    ];
    assert_eq!(errs[1..], expected, "{errs:#?}");
    // The duplicate is dropped in both places; everything else loads.
    assert_eq!(
        names(&l),
        [
            "ConfigMap default/good",
            "ConfigMap default/other",
            "ConfigMap other/elsewhere",
            "ConfigMap default/follows-n",
            "Namespace cluster-scoped",
        ]
    );
    let dup = l.errors.last().unwrap();
    assert_eq!(
        dup.id().map(ToString::to_string).as_deref(),
        Some("ConfigMap default/dup")
    );
}

#[test]
fn namespace_flag_fills_in_and_conflicts() {
    let mut o = opts(&["errors/d-namespace.yaml"]);
    o.namespace = Some("prod".into());
    o.default_namespace = "ctx".into();
    let l = manifest::load(&o);
    assert_eq!(
        names(&l),
        ["ConfigMap prod/follows-n", "Namespace cluster-scoped"]
    );
    assert_eq!(l.manifests[0].object()["metadata"]["namespace"], "prod");
    assert_eq!(l.errors.len(), 1);
    assert_eq!(
        l.errors[0].to_string(),
        format!(
            "{}: ConfigMap other/elsewhere: the namespace from the provided object \"other\" does not match the namespace \"prod\" given with -n",
            at("errors/d-namespace.yaml", 5)
        )
    );
    // Without -n the context namespace is the default.
    o.namespace = None;
    let l = load_ok(&o);
    assert_eq!(
        names(&l),
        [
            "ConfigMap other/elsewhere",
            "ConfigMap ctx/follows-n",
            "Namespace cluster-scoped"
        ]
    );
}

#[test]
fn unreadable_paths_are_errors() {
    let l = manifest::load(&opts(&["no-such-dir", "basic/01-namespace.yaml"]));
    assert_eq!(names(&l), ["Namespace demo"]);
    assert_eq!(
        l.errors,
        [ManifestError::Read {
            path: fixture("no-such-dir"),
            message: "the path does not exist".into()
        }]
    );
}

#[test]
fn live_objects_flatten_lists() {
    let objs = manifest::load_objects(&[fixture("live/objects.yaml")]).unwrap();
    let ids: Vec<String> = objs
        .iter()
        .map(|o| {
            kapply::objref::ObjectRef::from_object(o)
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        ids,
        [
            "ConfigMap default/a",
            "Deployment default/web",
            "ConfigMap default/inferred"
        ]
    );
    assert_eq!(objs[2]["apiVersion"], "v1");
    let err = manifest::load_objects(&[fixture("errors/a-syntax.yaml")]).unwrap_err();
    assert!(matches!(err, ManifestError::Parse { .. }), "{err}");
}

/// Runs `kubectl patch --local` on a file and returns what kubectl read, or
/// `None` when kubectl is not installed (a failure under `KAPPLY_CI`).
fn kubectl_reads(file: &Path) -> Option<Result<Value, String>> {
    Some(kubectl::reads(&kubectl::kubectl()?, file))
}

/// Random plain scalars built from the characters that decide YAML 1.1
/// resolution, read by kapply and by kubectl, as values and as keys.
#[test]
fn random_plain_scalars_match_kubectl() {
    const ALPHABET: &[u8] = b"0123456789+-._eExXoObByYnNtTfFaAlLsSuU~";
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut tokens = Vec::new();
    while tokens.len() < 1500 {
        let len = 1 + (next() % 6) as usize;
        let t: String = (0..len)
            .map(|_| ALPHABET[(next() % ALPHABET.len() as u64) as usize] as char)
            .collect();
        // A leading `-` alone or before a space is a sequence, not a scalar.
        if t == "-" {
            continue;
        }
        tokens.push(t);
    }
    let header = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: random\ndata:\n";
    let dir = tempfile::tempdir().unwrap();
    let mut errors = 0;
    for as_key in [false, true] {
        let mut seen = std::collections::HashSet::new();
        let mut body = String::from(header);
        for (i, t) in tokens.iter().enumerate() {
            let line = if as_key {
                format!("  {t}: v{i}\n")
            } else {
                format!("  k{i}: {t}\n")
            };
            // Scalars kapply refuses (`.inf`, a null key) must be refused by
            // kubectl too; they are checked one by one and left out.
            if kapply::yaml::parse(&format!("{header}{line}")).is_err() {
                errors += 1;
                let file = dir.path().join(format!("err-{as_key}-{i}.yaml"));
                std::fs::write(&file, format!("{header}{line}")).unwrap();
                match kubectl_reads(&file) {
                    None => return,
                    Some(r) => assert!(r.is_err(), "kubectl accepts {line:?}: {r:?}"),
                }
                continue;
            }
            // Keys that collide after conversion (`1` and `1.0` are both
            // "1") are left out: which one kubectl keeps depends on Go's map
            // order.
            if as_key {
                let doc = kapply::yaml::parse(&format!("{t}: v")).unwrap();
                let key = doc[0]
                    .to_value()
                    .as_object()
                    .unwrap()
                    .keys()
                    .next()
                    .cloned();
                if !seen.insert(key.unwrap()) {
                    continue;
                }
            }
            body.push_str(&line);
        }
        let file = dir.path().join(format!("random-{as_key}.yaml"));
        std::fs::write(&file, &body).unwrap();
        let Some(theirs) = kubectl_reads(&file) else {
            return;
        };
        let theirs = theirs.unwrap();
        let ours = kapply::yaml::parse(&body).unwrap()[0].to_value();
        let (o, t) = (&ours["data"], &theirs["data"]);
        let differ: Vec<String> = o
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, v)| t.get(k.as_str()) != Some(*v))
            .map(|(k, v)| format!("ours {k:?}: {v}"))
            .chain(
                t.as_object()
                    .unwrap()
                    .iter()
                    .filter(|(k, v)| o.get(k.as_str()) != Some(*v))
                    .map(|(k, v)| format!("kubectl {k:?}: {v}")),
            )
            .collect();
        assert!(differ.is_empty(), "keys: {as_key}: {differ:#?}");
    }
    // The generator does reach the refused forms, but rarely.
    assert!(errors < 150, "{errors}");
}

#[test]
fn errors_come_in_reading_order() {
    let mut o = opts(&[
        "errors/d-namespace.yaml",
        "errors/a-syntax.yaml",
        "missing.yaml",
    ]);
    o.namespace = Some("prod".into());
    let l = manifest::load(&o);
    let kinds: Vec<&str> = l
        .errors
        .iter()
        .map(|e| match e {
            ManifestError::Read { .. } => "read",
            ManifestError::NamespaceMismatch { .. } => "namespace",
            ManifestError::Parse { .. } => "parse",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["read", "namespace", "parse"]);
}

/// Ten ConfigMaps, each with six levels of nine aliases (about 600k nodes
/// per document once expanded, each just under the old per-document bound).
fn alias_bomb() -> String {
    let mut text = String::new();
    for d in 0..10 {
        text.push_str(&format!(
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lol-{d}\nx:\n  l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
        ));
        for l in 1..=6 {
            let p = format!("*l{}", l - 1);
            text.push_str(&format!("  l{l}: &l{l} [{}]\n", [p.as_str(); 9].join(", ")));
        }
        text.push_str("data:\n  k: v\n");
    }
    text
}

#[test]
fn alias_bombs_fail_at_their_document_and_kubectl_refuses_them_too() {
    let dir = tempfile::tempdir().unwrap();
    let bomb = dir.path().join("bomb.yaml");
    std::fs::write(&bomb, alias_bomb()).unwrap();
    let normal = dir.path().join("normal.yaml");
    std::fs::write(
        &normal,
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n\
         \x20       - name: a\n          env: &env\n            - {name: MODE, value: prod}\n\
         \x20       - name: b\n          env: *env\n",
    )
    .unwrap();
    let l = manifest::load(&LoadOptions {
        paths: vec![bomb.clone(), normal.clone()],
        ..Default::default()
    });
    let errs: Vec<String> = l.errors.iter().map(ToString::to_string).collect();
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert!(
        errs[0].starts_with(&format!("{}:1: excessive aliasing", bomb.display())),
        "{errs:#?}"
    );
    // The ordinary file with a shared env block still loads.
    assert_eq!(names(&l), ["Deployment default/web"]);
    let object = l.manifests[0].object();
    let env = &object["spec"]["template"]["spec"]["containers"][1]["env"];
    assert_eq!(env, &json!([{"name": "MODE", "value": "prod"}]));
    let Some(theirs) = kubectl_reads(&bomb) else {
        return;
    };
    let err = theirs.unwrap_err();
    assert!(err.contains("excessive aliasing"), "{err}");
}
