//! `kubectl kapply ...`: kubectl runs `kubectl-kapply` found on the PATH.
//! The same program as `kapply`.

// The same allocator as `kapply` (see src/main.rs).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    kapply::entry::main()
}
