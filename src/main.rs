// Sluice allocates many small AST nodes across threads; mimalloc handles that far better than glibc's malloc.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    sluice::cli::main()
}
