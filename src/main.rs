//! The kapply binary (the program is in `kapply::entry`, shared with the
//! `kubectl-kapply` plugin binary).

fn main() -> std::process::ExitCode {
    kapply::entry::main()
}
