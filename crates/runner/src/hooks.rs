//! Commands run at chosen moments of a capacity search: a profiler or a thread dump while the
//! peak runs (`--at-peak`, plan `hooks: {peak, each_step, on_fail, after}`). A hook is run by
//! `sh -c` in a process group of its own, with the search's figures in environment variables
//! (never pasted into the command text), its output in files of its user's alone (a folder
//! made 0700, files 0600, no link followed: see `model::private`), and a deadline after which the
//! whole group gets SIGTERM and then SIGKILL. What it did (times, exit status, files) goes into
//! the result; a failing hook warns, and fails the command only when marked `required`.

use results::find::HookRun;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a hook has after SIGTERM before SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(2);

/// One hook as configured.
#[derive(Clone, Debug, PartialEq)]
pub struct Hook {
    pub command: String,
    /// How far into its step it starts (0.0-1.0); `after` and `on_fail` start at once.
    pub at: f64,
    pub timeout: Duration,
    pub required: bool,
}

/// The hooks of a search.
#[derive(Clone, Debug, Default)]
pub struct Hooks {
    /// During a capture step re-run at the maximum sustainable level (and one at the first
    /// failing level).
    pub peak: Option<Hook>,
    /// During every step of the search.
    pub each_step: Option<Hook>,
    /// After each failing step.
    pub on_fail: Option<Hook>,
    /// After the search.
    pub after: Option<Hook>,
    /// Where their output goes.
    pub out_dir: PathBuf,
    /// Print what would run instead of running.
    pub dry_run: bool,
}

impl Hooks {
    pub fn any(&self) -> bool {
        self.peak.is_some()
            || self.each_step.is_some()
            || self.on_fail.is_some()
            || self.after.is_some()
    }
}

/// Where a hook runs: which hook, the step's name and level, and the step's length.
pub struct Moment<'a> {
    pub hook: &'a str,
    pub step: &'a str,
    pub level: f64,
    pub duration: Duration,
    pub run_id: &'a str,
}

/// A hook started in the background (after its delay into the step).
pub struct Pending {
    thread: Option<JoinHandle<HookRun>>,
    cancel: std::sync::Arc<AtomicBool>,
}

impl Pending {
    /// Waits for the hook to end (it has its own deadline).
    pub fn join(mut self) -> Option<HookRun> {
        self.thread.take()?.join().ok()
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.cancel.store(true, Ordering::Relaxed);
    }
}

/// Starts `hook` `delay` from now on a thread of its own; `origin` is the command's start
/// (for the times in the result).
pub fn start(hook: &Hook, m: &Moment, out_dir: &Path, delay: Duration, origin: Instant) -> Pending {
    let (hook, out_dir) = (hook.clone(), out_dir.to_path_buf());
    let (name, step, level, duration, run_id) = (
        m.hook.to_string(),
        m.step.to_string(),
        m.level,
        m.duration,
        m.run_id.to_string(),
    );
    let cancel = std::sync::Arc::new(AtomicBool::new(false));
    let flag = cancel.clone();
    let thread = std::thread::Builder::new()
        .name("brink-hook".into())
        .spawn(move || {
            let until = Instant::now() + delay;
            while Instant::now() < until && !flag.load(Ordering::Relaxed) {
                std::thread::sleep(
                    Duration::from_millis(10).min(until.saturating_duration_since(Instant::now())),
                );
            }
            let m = Moment {
                hook: &name,
                step: &step,
                level,
                duration,
                run_id: &run_id,
            };
            run(&hook, &m, &out_dir, origin)
        })
        .ok();
    Pending { thread, cancel }
}

/// Runs `hook` now and waits for it (or its deadline).
pub fn run(hook: &Hook, m: &Moment, out_dir: &Path, origin: Instant) -> HookRun {
    let slug: String = format!("{}-{}", m.hook, m.step)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let (stdout, stderr) = (
        out_dir.join(format!("{slug}.out")),
        out_dir.join(format!("{slug}.err")),
    );
    let started = Instant::now();
    let mut record = HookRun {
        hook: m.hook.to_string(),
        command: hook.command.clone(),
        step: m.step.to_string(),
        level: m.level,
        started_s: started.duration_since(origin).as_secs_f64(),
        ended_s: 0.0,
        exit_code: None,
        timed_out: false,
        error: None,
        stdout: stdout.display().to_string(),
        stderr: stderr.display().to_string(),
        required: hook.required,
    };
    let spawned = model::private::dir(out_dir)
        .and_then(|()| {
            Ok((
                model::private::create(&stdout)?,
                model::private::create(&stderr)?,
            ))
        })
        .and_then(|(out, err)| {
            Command::new("sh")
                .arg("-c")
                .arg(&hook.command)
                .env("BRINK_LEVEL", m.level.to_string())
                .env("BRINK_STEP", m.step)
                .env("BRINK_HOOK", m.hook)
                .env("BRINK_DURATION_S", m.duration.as_secs_f64().to_string())
                .env("BRINK_OUT_DIR", out_dir)
                .env("BRINK_RUN_ID", m.run_id)
                .stdin(Stdio::null())
                .stdout(out)
                .stderr(err)
                .process_group(0)
                .spawn()
        });
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            record.error = Some(format!("cannot start: {e}"));
            record.ended_s = origin.elapsed().as_secs_f64();
            return record;
        }
    };
    let deadline = started + hook.timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if Instant::now() >= deadline => {
                record.timed_out = true;
                break stop_group(&mut child);
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => {
                record.error = Some(e.to_string());
                break None;
            }
        }
    };
    record.exit_code = status.and_then(|s| s.code());
    record.ended_s = origin.elapsed().as_secs_f64();
    record
}

/// SIGTERM to the hook's whole group, then SIGKILL after a grace period.
fn stop_group(child: &mut std::process::Child) -> Option<std::process::ExitStatus> {
    let group = -(child.id() as i32);
    // SAFETY: kill(2) with a negative pid signals the process group the hook leads.
    unsafe { libc::kill(group, libc::SIGTERM) };
    let until = Instant::now() + TERM_GRACE;
    while Instant::now() < until {
        if let Ok(Some(s)) = child.try_wait() {
            // The leader is gone; anything it left in the group goes too.
            unsafe { libc::kill(group, libc::SIGKILL) };
            return Some(s);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: as above.
    unsafe { libc::kill(group, libc::SIGKILL) };
    child.wait().ok()
}

/// Whether a hook run failed (did not start, timed out, or exited non-zero).
pub fn failed(r: &HookRun) -> bool {
    r.error.is_some() || r.timed_out || r.exit_code != Some(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moment() -> Moment<'static> {
        Moment {
            hook: "peak",
            step: "capture",
            level: 16.0,
            duration: Duration::from_secs(3),
            run_id: "r1",
        }
    }

    #[test]
    fn a_hook_gets_its_values_as_environment_and_its_output_in_files() {
        let dir = tempfile::tempdir().unwrap();
        let hook = Hook {
            command: "echo \"$BRINK_HOOK $BRINK_STEP $BRINK_LEVEL $BRINK_DURATION_S $BRINK_RUN_ID\"; echo oops >&2; exit 3".into(),
            at: 0.5,
            timeout: Duration::from_secs(10),
            required: false,
        };
        let r = run(&hook, &moment(), dir.path(), Instant::now());
        assert_eq!(r.exit_code, Some(3));
        assert!(failed(&r) && !r.timed_out);
        assert_eq!(
            std::fs::read_to_string(&r.stdout).unwrap(),
            "peak capture 16 3 r1\n"
        );
        assert_eq!(std::fs::read_to_string(&r.stderr).unwrap(), "oops\n");
    }

    #[test]
    fn a_hook_past_its_deadline_is_stopped_with_its_children() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("child.pid");
        let hook = Hook {
            command: format!("sleep 30 & echo $! > {}; wait", pidfile.display()),
            at: 0.0,
            timeout: Duration::from_millis(300),
            required: true,
        };
        let t = Instant::now();
        let r = run(&hook, &moment(), dir.path(), t);
        assert!(r.timed_out, "{r:?}");
        assert!(t.elapsed() < Duration::from_secs(5));
        let child: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        std::thread::sleep(Duration::from_millis(100));
        // SAFETY: signal 0 only checks whether the process exists.
        let alive = unsafe { libc::kill(child, 0) } == 0
            && !std::fs::read_to_string(format!("/proc/{child}/stat"))
                .unwrap_or_default()
                .contains(") Z ");
        assert!(!alive, "the hook's child was stopped with its group");
    }
}
