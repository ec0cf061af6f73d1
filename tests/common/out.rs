//! A command's exit code and output, as the test binaries that run kapply
//! or kubectl see it (included with `#[path = "common/out.rs"] mod out;`).

// Each test binary uses only some of these helpers.
#![allow(dead_code)]

use std::process::{Command, Stdio};

pub struct Out {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl std::fmt::Debug for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

impl Out {
    /// Asserts that stdout contains `text`; the whole output on failure.
    pub fn assert_stdout(&self, text: &str) {
        assert!(self.stdout.contains(text), "{text:?} not in {self:?}");
    }

    /// Asserts that stderr contains `text`; the whole output on failure.
    pub fn assert_stderr(&self, text: &str) {
        assert!(self.stderr.contains(text), "{text:?} not in {self:?}");
    }
}

/// Runs `cmd` to its end with stdin closed (never a terminal).
pub fn run(cmd: &mut Command) -> Out {
    let o = cmd.stdin(Stdio::null()).output().expect("spawn");
    Out {
        code: o.status.code(),
        stdout: String::from_utf8(o.stdout).expect("utf-8 stdout"),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}
