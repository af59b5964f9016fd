//! The one CPU lock of every test, across threads and processes.
//!
//! This machine has two cores and runs the suite's tests at once (threads under `cargo test`,
//! processes under `cargo nextest`). A test whose verdict depends on time (a bound, a rate, a
//! latency, a capacity) measures whatever else runs beside it; so does a test that takes a CPU
//! from others (busy loops, a spinning service, a saturated generator). The rule:
//!
//! * such a test holds the lock **exclusive** ([`exclusive`]) for as long as it measures;
//! * every other test that makes load holds it **shared** ([`shared`]): any number of them
//!   run together, never beside an exclusive one.
//!
//! The helpers that start a load or a search (brink's `support::brink_json`, the engine's
//! `common::run`) take it shared themselves, so a test cannot forget it; a test that already
//! holds it (either way) on its thread, or a thread it spawned, takes nothing more.
//!
//! Between processes the lock is an `flock` on one file in the workspace's `target/`
//! directory (shared and exclusive, released by the kernel when a process dies, so a killed
//! test never leaves it held), taken through a gate so an exclusive waiter is never starved
//! by shared holders; within a process, a readers-writer lock keeps the threads of one test
//! binary apart the same way.

use std::cell::Cell;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Within one process: the threads of one test binary.
static IN_PROCESS: RwLock<()> = RwLock::new(());
/// Holders in this process: while there is one, a thread with no test of its own (one a test
/// spawned: libtest names every test's thread, spawned ones have no name) belongs to a holder
/// and takes nothing. Taking the in-process lock again there could deadlock: a reader
/// waits behind a queued writer while its own test, the writer's wait, waits for it.
static HOLDERS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Guards this thread holds (nested takes are free).
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// Whether this thread's own lock is exclusive (`None`: it holds none of its own).
    static EXCLUSIVE: Cell<Option<bool>> = const { Cell::new(None) };
    /// The lock [`hold_shared`] took, held until this thread (the test's) ends.
    static KEPT: std::cell::RefCell<Option<Cpu>> = const { std::cell::RefCell::new(None) };
}

/// Holds the lock shared until the test ends (its thread, under `cargo test`; its process,
/// under nextest), unless this thread holds it already: what the helpers that start brink
/// call, so a test that makes load can never forget the lock.
pub fn hold_shared() {
    if DEPTH.get() > 0 {
        return;
    }
    let held = shared();
    KEPT.with_borrow_mut(|k| *k = Some(held));
}

/// The lock, held until dropped.
#[must_use = "the lock is released when the guard is dropped"]
pub struct Cpu {
    held: Held,
    /// When it was asked for and when it was got, for the log ([`log`]).
    asked: std::time::Instant,
    got: std::time::Instant,
    /// [`cpu_ms`] when it was got (0 unless logging).
    cpu_at_got: u64,
}

enum Held {
    /// Taken before on this thread, or by the test that spawned this thread.
    Nested,
    /// Both locks are released as the guard drops (the file's with the file).
    Shared {
        _file: File,
        _inner: RwLockReadGuard<'static, ()>,
    },
    Exclusive {
        _file: File,
        _inner: RwLockWriteGuard<'static, ()>,
    },
}

/// Runs alone: no other test that makes load runs meanwhile, in this process or another.
pub fn exclusive() -> Cpu {
    exclusive_on(&lock_path())
}

/// Runs beside other shared holders, never beside an exclusive one.
pub fn shared() -> Cpu {
    shared_on(&lock_path())
}

fn exclusive_on(path: &Path) -> Cpu {
    // Shared cannot become exclusive in place (another shared holder may be waiting for
    // the gate meanwhile): a test takes the exclusive lock first thing, before any helper.
    assert!(
        EXCLUSIVE.get() != Some(false),
        "this test holds the CPU lock shared (a helper took it): take cpu_exclusive() first thing in the test"
    );
    take(path, true)
}

fn shared_on(path: &Path) -> Cpu {
    take(path, false)
}

/// Takes the lock on `path` (both the in-process one and the file's), or nothing when this
/// thread holds it already.
fn take(path: &Path, exclusive: bool) -> Cpu {
    if let Some(nested) = nested() {
        return nested;
    }
    let asked = std::time::Instant::now();
    let held = if exclusive {
        let inner = IN_PROCESS.write().unwrap_or_else(|e| e.into_inner());
        Held::Exclusive {
            _file: through_gate(path, File::lock),
            _inner: inner,
        }
    } else {
        let inner = IN_PROCESS.read().unwrap_or_else(|e| e.into_inner());
        Held::Shared {
            _file: through_gate(path, File::lock_shared),
            _inner: inner,
        }
    };
    HOLDERS.fetch_add(1, Ordering::SeqCst);
    DEPTH.set(1);
    EXCLUSIVE.set(Some(exclusive));
    Cpu {
        held,
        asked,
        got: std::time::Instant::now(),
        cpu_at_got: if std::env::var_os("BRINK_TEST_LOCK_LOG").is_some() {
            cpu_ms()
        } else {
            0
        },
    }
}

/// Locks `path` with `lock` through a gate: `flock` prefers no one, so shared holders
/// arriving one after another could keep an exclusive one waiting for ever. Every taker
/// passes the gate (a second file, held exclusive) first; an exclusive taker holds it while it
/// waits, so no new shared holder gets past it meanwhile. (An error from `flock`, on a file
/// system without it, leaves the in-process lock alone in force.)
fn through_gate(path: &Path, lock: fn(&File) -> std::io::Result<()>) -> File {
    let mut gate_path = path.as_os_str().to_owned();
    gate_path.push(".gate");
    let gate = lock_file(Path::new(&gate_path));
    let _ = gate.lock();
    let file = lock_file(path);
    let _ = lock(&file);
    drop(gate);
    file
}

/// A guard that takes nothing: this thread holds the lock already, or it is a thread a test
/// spawned while a test of this process holds it.
fn nested() -> Option<Cpu> {
    let depth = DEPTH.get();
    let spawned_by_holder =
        std::thread::current().name().is_none() && HOLDERS.load(Ordering::SeqCst) > 0;
    if depth == 0 && !spawned_by_holder {
        return None;
    }
    DEPTH.set(depth + 1);
    let now = std::time::Instant::now();
    Some(Cpu {
        held: Held::Nested,
        asked: now,
        got: now,
        cpu_at_got: 0,
    })
}

impl Drop for Cpu {
    fn drop(&mut self) {
        // At thread exit (a kept lock) the thread's own cells may be gone already.
        let _ = DEPTH.try_with(|d| d.set(d.get().saturating_sub(1)));
        if !matches!(self.held, Held::Nested) {
            HOLDERS.fetch_sub(1, Ordering::SeqCst);
            let _ = EXCLUSIVE.try_with(|e| e.set(None));
            log(self);
        }
        // The file's lock goes with the file, the in-process lock with its guard.
    }
}

/// With `BRINK_TEST_LOCK_LOG` set, each holder appends one line to that file as it lets go:
/// `exclusive|shared <waited ms> <held ms> <got at, ms since 1970> <CPU ms> <test>` (the CPU
/// this process and the children it waited for used while it held the lock), to see where a run's time goes (the
/// exclusive holds add up to the least a run can take, whatever its parallelism).
fn log(cpu: &Cpu) {
    use std::io::Write;
    let Some(path) = std::env::var_os("BRINK_TEST_LOCK_LOG") else {
        return;
    };
    let kind = match cpu.held {
        Held::Exclusive { .. } => "exclusive",
        _ => "shared",
    };
    // nextest runs one test a process (`<binary> --exact <name> ...`); libtest names the
    // thread of each test.
    let args: Vec<String> = std::env::args().collect();
    let test = args
        .iter()
        .position(|a| a == "--exact")
        .and_then(|i| args.get(i + 1).cloned())
        .or_else(|| std::thread::current().name().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned());
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .saturating_sub(cpu.got.elapsed());
    let line = format!(
        "{kind} {} {} {} {} {test}\n",
        cpu.got.duration_since(cpu.asked).as_millis(),
        cpu.got.elapsed().as_millis(),
        since_epoch.as_millis(),
        cpu_ms().saturating_sub(cpu.cpu_at_got)
    );
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = f.write_all(line.as_bytes());
    }
}

/// CPU time (ms) of this process and of the children it has waited for, from
/// `/proc/self/stat` (user and system, in clock ticks of 10 ms); 0 where there is none.
fn cpu_ms() -> u64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0;
    };
    // Fields after the command's closing parenthesis: state is field 3, utime 14 ... cstime 17.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    after
        .split_whitespace()
        .skip(11)
        .take(4)
        .filter_map(|t| t.parse::<u64>().ok())
        .sum::<u64>()
        * 10
}

/// The lock file: `target/test-cpu.lock` of this workspace (`BRINK_TEST_LOCK` names another,
/// for a target directory kept elsewhere).
fn lock_path() -> PathBuf {
    std::env::var_os("BRINK_TEST_LOCK")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/test-cpu.lock")
        })
}

/// `path` opened fresh for each holder (`flock` belongs to an open file, so each holder's
/// lock is its own).
fn lock_file(path: &Path) -> File {
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .unwrap_or_else(|e| panic!("the test CPU lock {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// An exclusive holder keeps a shared one out, across processes: a child process (this
    /// test binary again) waits for the parent's exclusive lock, then takes it shared.
    #[test]
    fn exclusive_keeps_out_shared_across_processes_and_nests_on_its_thread() {
        if let Some(lock) = std::env::var_os("TESTKIT_CPU_CHILD") {
            let t = Instant::now();
            let _s = shared_on(Path::new(&lock));
            println!("waited_ms={}", t.elapsed().as_millis());
            return;
        }
        let lock = std::env::temp_dir().join(format!("testkit-cpu-{}.lock", std::process::id()));
        let held = exclusive_on(&lock);
        // Nested takes on the holder's thread cost nothing and do not deadlock.
        drop(shared_on(&lock));
        drop(exclusive_on(&lock));
        let child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "cpu::tests::exclusive_keeps_out_shared_across_processes_and_nests_on_its_thread",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("TESTKIT_CPU_CHILD", &lock)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(400));
        drop(held);
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let waited: u64 = text
            .split("waited_ms=")
            .nth(1)
            .and_then(|t| t.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no wait reported: {text}"));
        // The child started within the 400 ms the parent held the lock, so it waited some of
        // them (at least 100 ms even if starting it took 300).
        assert!(waited >= 100, "the child waited {waited} ms: {text}");
        let _ = std::fs::remove_file(&lock);
    }
}
