//! `kubectl kapply ...`: kubectl runs `kubectl-kapply` found on the PATH.
//! The same program as `kapply`.

fn main() -> std::process::ExitCode {
    kapply::entry::main()
}
