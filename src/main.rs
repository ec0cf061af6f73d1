//! The kapply binary (the program is in `kapply::entry`, shared with the
//! `kubectl-kapply` plugin binary).

// mimalloc: at 10,000 objects glibc's malloc/free were a quarter of the CPU
// time of `diff` and `plan` (perf); mimalloc cut their CPU time by about a
// third. Without transparent huge pages (`no_thp`) its peak RSS stays at
// glibc's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    kapply::entry::main()
}
