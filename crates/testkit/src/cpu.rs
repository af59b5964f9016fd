//! The one CPU lock of every test, across threads and processes.
//!
//! This machine has two cores and runs the suite's tests at once (threads under `cargo test`,
//! processes under `cargo nextest`). A test whose verdict depends on time (a bound, a rate, a
//! latency, a capacity) measures whatever else runs beside it; so does a test that takes a CPU
//! from others (busy loops, a spinning service, a saturated generator). The rule, three
//! levels:
//!
//! * such a test holds the lock **exclusive** ([`exclusive`]) for as long as it measures:
//!   nothing else that makes load runs meanwhile;
//! * a test whose verdict depends on time but whose load is light (its own process, its
//!   servers and brink together use under a quarter of one CPU, measured with the lock log
//!   below, and it measures no CPU) may hold it **light** ([`light`]): up to [`LIGHT_SLOTS`]
//!   light tests run together, together taking at most one of the two CPUs, never beside a
//!   shared or an exclusive one;
//! * every other test that makes load holds it **shared** ([`shared`]): any number of them
//!   run together, never beside a light or an exclusive one.
//!
//! The helpers that start a load or a search (brink's `support::brink_json`, the engine's
//! `common::run`) take it shared themselves, so a test cannot forget it; a test that already
//! holds it (at any level) on its thread, or a thread it spawned, takes nothing more.
//!
//! Between processes the lock is `flock` on files in the workspace's `target/` directory
//! (released by the kernel when a process dies, so a killed test never leaves it held): the
//! main file, exclusive or shared, and [`LIGHT_SLOTS`] slot files, one held exclusive by each
//! light holder and all held shared by each shared holder. Every taker goes through a gate
//! and holds it until it is in, so shared holders cannot stream past an exclusive or light
//! waiter (the waiters at the gate itself go in no set order); within a process, a
//! readers-writer lock keeps the threads of one test binary apart the same way.

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
    /// The level of this thread's own lock (`None`: it holds none of its own).
    static LEVEL: Cell<Option<Level>> = const { Cell::new(None) };
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

/// The three levels, in the order one may nest inside another (a test holding a level may
/// take a lower one again for free, never a higher one).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Level {
    Shared,
    Light,
    Exclusive,
}

/// How many light tests may run at once: each uses under a quarter of a CPU, so together they
/// leave one of this machine's two CPUs free.
pub const LIGHT_SLOTS: usize = 4;

enum Held {
    /// Taken before on this thread, or by the test that spawned this thread.
    Nested,
    /// The locks are released as the guard drops (the files' with the files).
    Taken {
        level: Level,
        _files: Vec<File>,
        _inner: Inner,
    },
}

enum Inner {
    Read(#[allow(dead_code)] RwLockReadGuard<'static, ()>),
    Write(#[allow(dead_code)] RwLockWriteGuard<'static, ()>),
}

/// Runs alone: no other test that makes load runs meanwhile, in this process or another.
pub fn exclusive() -> Cpu {
    take(&lock_path(), Level::Exclusive)
}

/// Runs beside other light holders (at most [`LIGHT_SLOTS`] in all), never beside a shared or
/// an exclusive one.
pub fn light() -> Cpu {
    take(&lock_path(), Level::Light)
}

/// Runs beside other shared holders, never beside a light or an exclusive one.
pub fn shared() -> Cpu {
    shared_on(&lock_path())
}

#[cfg(test)]
fn exclusive_on(path: &Path) -> Cpu {
    take(path, Level::Exclusive)
}

#[cfg(test)]
fn light_on(path: &Path) -> Cpu {
    take(path, Level::Light)
}

fn shared_on(path: &Path) -> Cpu {
    take(path, Level::Shared)
}

/// Takes the lock on `path` at `level` (the in-process one and the files'), or nothing when
/// this thread holds it already at that level or a higher one.
fn take(path: &Path, level: Level) -> Cpu {
    // A level cannot rise in place (another holder may be waiting for the gate meanwhile): a
    // test takes its light or exclusive lock first thing, before any helper takes it shared.
    if let Some(own) = LEVEL.get() {
        assert!(
            own >= level,
            "this test holds the CPU lock {own:?} (a helper took it): take the {level:?} lock first thing in the test"
        );
    }
    if let Some(nested) = nested() {
        return nested;
    }
    let asked = std::time::Instant::now();
    let inner = if level == Level::Exclusive {
        Inner::Write(IN_PROCESS.write().unwrap_or_else(|e| e.into_inner()))
    } else {
        Inner::Read(IN_PROCESS.read().unwrap_or_else(|e| e.into_inner()))
    };
    let held = Held::Taken {
        level,
        _files: through_gate(path, level),
        _inner: inner,
    };
    HOLDERS.fetch_add(1, Ordering::SeqCst);
    DEPTH.set(1);
    LEVEL.set(Some(level));
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

/// Locks the files of `level` through a gate: `flock` prefers no one, so shared holders
/// arriving one after another could keep an exclusive one waiting for ever. Every taker
/// passes the gate (a file held exclusive) first and holds it while it waits, so no one else
/// gets past it meanwhile; a holder takes nothing more, so the wait always ends.
///
/// * exclusive: the main file exclusive;
/// * light: the main file shared, then the first free slot file exclusive (polled: any slot
///   that frees will do);
/// * shared: the main file shared, then every slot file shared (so no light holder runs).
///
/// (An error from `flock`, on a file system without it, leaves the in-process lock alone in
/// force.)
fn through_gate(path: &Path, level: Level) -> Vec<File> {
    let gate = lock_file(&beside(path, ".gate"));
    let _ = gate.lock();
    let main = lock_file(path);
    let mut files = Vec::with_capacity(1 + LIGHT_SLOTS);
    match level {
        Level::Exclusive => {
            let _ = main.lock();
            files.push(main);
        }
        Level::Light => {
            let _ = main.lock_shared();
            files.push(main);
            let mut slots: Vec<File> = (0..LIGHT_SLOTS)
                .map(|i| lock_file(&beside(path, &format!(".light{i}"))))
                .collect();
            let taken = 'found: loop {
                for (i, slot) in slots.iter().enumerate() {
                    match slot.try_lock() {
                        Ok(()) | Err(std::fs::TryLockError::Error(_)) => break 'found i,
                        Err(std::fs::TryLockError::WouldBlock) => {}
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            };
            // Only the slot taken is kept open (closing the others releases nothing held).
            files.push(slots.swap_remove(taken));
        }
        Level::Shared => {
            let _ = main.lock_shared();
            files.push(main);
            for i in 0..LIGHT_SLOTS {
                let slot = lock_file(&beside(path, &format!(".light{i}")));
                let _ = slot.lock_shared();
                files.push(slot);
            }
        }
    }
    drop(gate);
    files
}

/// `path` with `suffix` added to its name.
fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
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
            let _ = LEVEL.try_with(|e| e.set(None));
            log(self);
        }
        // The file's lock goes with the file, the in-process lock with its guard.
    }
}

/// With `BRINK_TEST_LOCK_LOG` set, each holder appends one line to that file as it lets go:
/// `exclusive|light|shared <waited ms> <held ms> <got at, ms since 1970> <CPU ms> <test>` (the CPU
/// this process and the children it waited for used while it held the lock), to see where a run's time goes (the
/// exclusive holds add up to the least a run can take, whatever its parallelism).
fn log(cpu: &Cpu) {
    use std::io::Write;
    let Some(path) = std::env::var_os("BRINK_TEST_LOCK_LOG") else {
        return;
    };
    let kind = match cpu.held {
        Held::Taken {
            level: Level::Exclusive,
            ..
        } => "exclusive",
        Held::Taken {
            level: Level::Light,
            ..
        } => "light",
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

    /// Takes the lock at `take` on a thread of its own (named, as a test's thread is), tells
    /// `got` once it holds it, and lets go when `release` says so (or is dropped).
    fn holder(
        path: &Path,
        take: fn(&Path) -> Cpu,
    ) -> (
        std::sync::mpsc::Receiver<()>,
        std::sync::mpsc::Sender<()>,
        std::thread::JoinHandle<()>,
    ) {
        let (got_tx, got) = std::sync::mpsc::channel();
        let (release, release_rx) = std::sync::mpsc::channel::<()>();
        let path = path.to_owned();
        let thread = std::thread::Builder::new()
            .name("holder".into())
            .spawn(move || {
                let _held = take(&path);
                let _ = got_tx.send(());
                let _ = release_rx.recv();
            })
            .unwrap();
        (got, release, thread)
    }

    /// Light holders run together up to the slots, a shared or an exclusive one waits until
    /// every light one has let go, and a light one waits for a shared one.
    #[test]
    fn light_holders_run_together_and_apart_from_the_others() {
        let lock = std::env::temp_dir().join(format!("testkit-light-{}.lock", std::process::id()));
        let soon = Duration::from_secs(10);
        let not_yet = Duration::from_millis(300);
        let lights: Vec<_> = (0..LIGHT_SLOTS).map(|_| holder(&lock, light_on)).collect();
        for (got, _, _) in &lights {
            got.recv_timeout(soon)
                .expect("every light holder runs beside the others");
        }
        let (extra_got, extra_release, extra) = holder(&lock, light_on);
        // The extra light holder waits for a slot holding the gate (it is first in line):
        // only then does the shared one come, so it queues behind (had it passed the gate
        // first, it would be first in line, and rightly wait for every light holder).
        let gate = lock_file(&beside(&lock, ".gate"));
        let queued = Instant::now();
        while gate.try_lock().is_ok() {
            gate.unlock().unwrap();
            assert!(
                queued.elapsed() < soon,
                "the extra light holder never reached the gate"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        drop(gate);
        let (shared_got, shared_release, shared) = holder(&lock, shared_on);
        assert!(
            extra_got.recv_timeout(not_yet).is_err(),
            "one light holder more than the slots waits"
        );
        let (first_got, first_release, first) = {
            let mut all = lights.into_iter();
            let first = all.next().unwrap();
            for (_, release, thread) in all {
                drop(release);
                thread.join().unwrap();
            }
            first
        };
        drop(first_got);
        // Three slots are free: the waiting light holder gets one (the shared one, behind
        // it or not, cannot run beside the first light holder still there).
        extra_got.recv_timeout(soon).expect("a freed slot is taken");
        assert!(
            shared_got.recv_timeout(not_yet).is_err(),
            "a shared holder waits while a light one holds"
        );
        drop(first_release);
        first.join().unwrap();
        drop(extra_release);
        extra.join().unwrap();
        shared_got
            .recv_timeout(soon)
            .expect("the shared holder runs once no light one holds");
        let (light_got, light_release, light) = holder(&lock, light_on);
        assert!(
            light_got.recv_timeout(not_yet).is_err(),
            "a light holder waits while a shared one holds"
        );
        drop(shared_release);
        shared.join().unwrap();
        light_got.recv_timeout(soon).expect("then it runs");
        let (excl_got, excl_release, excl) = holder(&lock, exclusive_on);
        assert!(
            excl_got.recv_timeout(not_yet).is_err(),
            "an exclusive holder waits while a light one holds"
        );
        drop(light_release);
        light.join().unwrap();
        excl_got.recv_timeout(soon).expect("then it runs");
        drop(excl_release);
        excl.join().unwrap();
        for suffix in ["", ".gate", ".light0", ".light1", ".light2", ".light3"] {
            let _ = std::fs::remove_file(beside(&lock, suffix));
        }
    }

    /// A test holding a level may take the same or a lower one again for free, not a higher.
    #[test]
    fn a_level_nests_downwards_only() {
        let lock = std::env::temp_dir().join(format!("testkit-nest-{}.lock", std::process::id()));
        let path = lock.clone();
        let rose = std::thread::Builder::new()
            .name("nest".into())
            .spawn(move || {
                let _light = light_on(&path);
                drop(shared_on(&path));
                drop(light_on(&path));
                let _ = exclusive_on(&path);
            })
            .unwrap()
            .join();
        let message = rose
            .err()
            .and_then(|e| e.downcast::<String>().ok())
            .map(|m| *m)
            .unwrap_or_default();
        assert!(
            message.contains("holds the CPU lock Light"),
            "light then exclusive panics naming the held level: {message:?}"
        );
        for suffix in ["", ".gate", ".light0", ".light1", ".light2", ".light3"] {
            let _ = std::fs::remove_file(beside(&lock, suffix));
        }
    }
}
