//! Files kapply writes for the user: exports and the demo's kubeconfig.
//! One place decides how they are opened, so a file with Secret values or
//! credentials is never left readable by other users of the machine, and an
//! existing file is replaced only when the caller says so.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

/// Opens `path` for writing. `overwrite`: an existing file is truncated;
/// otherwise it is refused (`AlreadyExists`) by the open itself, so a file
/// created meanwhile is never lost. `private`: created 0600, and an
/// existing file replaced is made 0600 before anything is written to it.
pub fn open_for_write(path: &Path, overwrite: bool, private: bool) -> io::Result<File> {
    let mut open = OpenOptions::new();
    open.write(true);
    if overwrite {
        open.create(true).truncate(true);
    } else {
        open.create_new(true);
    }
    #[cfg(unix)]
    if private {
        use std::os::unix::fs::OpenOptionsExt;
        open.mode(0o600);
    }
    let f = open.open(path)?;
    // The mode of `open` only applies to a file it creates.
    #[cfg(unix)]
    if private {
        use std::os::unix::fs::PermissionsExt;
        f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(f)
}

/// Writes `bytes` to `path` through [`open_for_write`], synced.
pub fn write(path: &Path, bytes: &[u8], overwrite: bool, private: bool) -> io::Result<()> {
    let mut f = open_for_write(path, overwrite, private)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// Writes `bytes` to `path`, replacing it, readable by its owner only:
/// for credentials (the demo's kubeconfig holds its token).
pub fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write(path, bytes, true, true)
}

/// Whether manifest text (one or more YAML documents) holds a Secret: its
/// file is then written 0600.
pub fn holds_secret(text: &str, path: &Path) -> bool {
    let loaded = crate::manifest::parse_str(text, path, &crate::manifest::LoadOptions::default());
    loaded.manifests.iter().any(|m| m.id.kind == "Secret")
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn private_files_are_0600_new_or_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.yaml");
        write(&p, b"a", false, true).unwrap();
        assert_eq!(mode(&p), 0o600);
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        write_private(&p, b"b").unwrap();
        assert_eq!(mode(&p), 0o600);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "b");
    }

    #[test]
    fn an_existing_file_is_kept_without_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("cm.yaml");
        std::fs::write(&p, "hand-edited").unwrap();
        let e = write(&p, b"new", false, false).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "hand-edited");
    }

    #[test]
    fn secrets_are_found_in_any_document() {
        let p = Path::new("x.yaml");
        let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n";
        let s = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: b\n";
        assert!(!holds_secret(cm, p));
        assert!(holds_secret(&format!("{cm}---\n{s}"), p));
    }
}
