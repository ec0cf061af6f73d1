//! Regenerates `assets/syntect/yaml.packdump` from
//! `assets/syntect/yaml.sublime-syntax`:
//! `cargo run --example gen_syntect_dumps`.
//! The runtime (`kapply::highlight`) only loads the dump.

use std::path::Path;
use syntect::parsing::SyntaxSetBuilder;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/syntect");
    let mut builder = SyntaxSetBuilder::new();
    // Lines are fed with their newline (`load_defaults_newlines` style).
    builder.add_from_folder(&dir, true)?;
    let set = builder.build();
    let names: Vec<&str> = set.syntaxes().iter().map(|s| s.name.as_str()).collect();
    let out = dir.join("yaml.packdump");
    syntect::dumps::dump_to_file(&set, &out)?;
    println!(
        "wrote {} ({} bytes): {names:?}",
        out.display(),
        std::fs::metadata(&out)?.len()
    );
    Ok(())
}
