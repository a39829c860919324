use std::alloc::{GlobalAlloc, Layout};

/// mimalloc (Sluice allocates many small AST nodes across threads; it handles that far better
/// than glibc's malloc), and a clear exit 2 instead of an abort when memory runs out under a
/// limit (`ulimit -v`, a container): like any input Sluice cannot handle, the verdict is "could
/// not check", and the message says why. The `system-allocator` feature swaps in the system's
/// malloc, for heap profilers that trace malloc (heaptrack: see bench/profile.sh).
struct Allocator;

#[cfg(not(feature = "system-allocator"))]
use mimalloc::MiMalloc as Inner;
#[cfg(feature = "system-allocator")]
use std::alloc::System as Inner;

#[global_allocator]
static GLOBAL: Allocator = Allocator;

unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        checked(unsafe { Inner.alloc(layout) }, layout.size())
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        checked(unsafe { Inner.alloc_zeroed(layout) }, layout.size())
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { Inner.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        checked(unsafe { Inner.realloc(ptr, layout, new_size) }, new_size)
    }
}

fn checked(ptr: *mut u8, size: usize) -> *mut u8 {
    if ptr.is_null() {
        out_of_memory(size);
    }
    ptr
}

/// Says so and exits 2, allocating nothing on the way (the message is built on the stack and
/// written with one system call; `_exit` runs no destructors that might allocate).
fn out_of_memory(size: usize) -> ! {
    let mut message = [0u8; 256];
    let mut len = 0;
    let mut push = |bytes: &[u8]| {
        let n = bytes.len().min(message.len() - len);
        message[len..len + n].copy_from_slice(&bytes[..n]);
        len += n;
    };
    push(b"sluice: out of memory: could not allocate ");
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut rest = size;
    loop {
        i -= 1;
        digits[i] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    push(&digits[i..]);
    push(b" bytes; the input needs more memory than this process may use. No verdict.\n");
    unsafe {
        nix::libc::write(2, message.as_ptr().cast(), len);
        nix::libc::_exit(2)
    }
}

fn main() -> std::process::ExitCode {
    let code = sluice::cli::command::main();
    exit_without_freeing(code)
}

/// Ends the process without the exit handlers. The one that costs is mimalloc's, which, linked
/// into a program, gives back to the system every page it holds before the process ends (one
/// `madvise` per range: 5–10% of a warm `lint` of a large history), when the exit is about to
/// release the whole address space anyway. Sluice registers none of its own, and what it writes
/// is flushed here: stdout, the only stream it buffers; its files are flushed and closed when they
/// are dropped, before `cli::command::main` returns.
fn exit_without_freeing(code: std::process::ExitCode) -> std::process::ExitCode {
    use std::io::Write;
    let Some(status) = (0..=u8::MAX).find(|&status| std::process::ExitCode::from(status) == code) else {
        return code;
    };
    if std::io::stdout().flush().is_err() {
        return code;
    }
    // SAFETY: `_exit` ends the process at once; nothing of Rust's is left to run.
    unsafe { nix::libc::_exit(i32::from(status)) }
}

/// mimalloc commits the memory of its arenas eagerly on Linux, which counted 25–45 MB of
/// untouched memory in the peak resident size of an ordinary `lint` (half of it on small
/// histories); committing on demand costs nothing measurable. The option must be set before the
/// first allocation reserves an arena: in a constructor, before the Rust runtime starts.
#[cfg(not(feature = "system-allocator"))]
#[ctor::ctor(unsafe)]
fn commit_memory_as_used() {
    /// `mi_option_arena_eager_commit` in mimalloc.h (the crate names only some options).
    const ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;
    // SAFETY: runs before `main`, on the only thread (the option setters are not thread-safe).
    unsafe {
        libmimalloc_sys::mi_option_set(ARENA_EAGER_COMMIT, 0);
    }
    // glibc's own malloc still serves glibc: every thread Rust starts asks it for a few bytes
    // (`pthread_getattr_np`), and glibc reserves a 64–128 MB arena of address space for each
    // new thread that does. Under an address-space limit (`ulimit -v`) those reservations, not
    // Sluice's memory, were what made a thread fail to start. One arena serves those few bytes.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: as above, before any thread exists.
    unsafe {
        nix::libc::mallopt(nix::libc::M_ARENA_MAX, 1);
    }
}
