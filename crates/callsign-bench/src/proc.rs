//! What a process uses, read from `/proc`: RSS, open files, CPU time and write calls.
use anyhow::{Context, Result};

/// VmRSS of a process, MiB.
pub fn rss_mib(pid: u32) -> Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("VmRSS")?;
    Ok(kb / 1024.0)
}

/// Open file descriptors of a process (entries of `/proc/<pid>/fd`).
pub fn open_fds(pid: u32) -> Result<usize> {
    Ok(std::fs::read_dir(format!("/proc/{pid}/fd"))?.count())
}

/// What a process has used so far: CPU seconds (`utime + stime` of `/proc/<pid>/stat`, all its
/// threads, also those that have exited) and what it handed to write calls (`wchar` and
/// `syscw` of `/proc/<pid>/io`: files, pipes and sockets alike; an `fsync` is neither).
#[derive(Clone, Copy, Default)]
pub struct Usage {
    pub cpu_secs: f64,
    pub written_bytes: f64,
    pub write_calls: f64,
}

pub fn usage(pid: u32) -> Result<Usage> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .with_context(|| format!("reading /proc/{pid}/stat"))?;
    // The command name, in parentheses, may hold spaces: count fields after its last ')'.
    let rest: Vec<&str> = stat
        .rsplit_once(')')
        .context("/proc/<pid>/stat")?
        .1
        .split_whitespace()
        .collect();
    let stat_field = |n: usize| -> Result<f64> {
        rest.get(n)
            .and_then(|v| v.parse().ok())
            .with_context(|| format!("field {n} after the name in /proc/{pid}/stat"))
    };
    let io = std::fs::read_to_string(format!("/proc/{pid}/io"))
        .with_context(|| format!("reading /proc/{pid}/io"))?;
    let io_field = |name: &str| -> Result<f64> {
        io.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .with_context(|| format!("{name} in /proc/{pid}/io"))
    };
    Ok(Usage {
        // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
        cpu_secs: (stat_field(11)? + stat_field(12)?) / clock_ticks()?,
        written_bytes: io_field("wchar:")?,
        write_calls: io_field("syscw:")?,
    })
}

impl Usage {
    fn zip(self, o: Usage, f: impl Fn(f64, f64) -> f64) -> Usage {
        Usage {
            cpu_secs: f(self.cpu_secs, o.cpu_secs),
            written_bytes: f(self.written_bytes, o.written_bytes),
            write_calls: f(self.write_calls, o.write_calls),
        }
    }

    /// Per one of `k` (creates, commits).
    pub fn per(self, k: f64) -> Usage {
        self.zip(self, |a, _| a / k)
    }
}

impl std::ops::Add for Usage {
    type Output = Usage;
    fn add(self, o: Usage) -> Usage {
        self.zip(o, |a, b| a + b)
    }
}

impl std::ops::Sub for Usage {
    type Output = Usage;
    fn sub(self, o: Usage) -> Usage {
        self.zip(o, |a, b| a - b)
    }
}

/// The kernel's clock ticks per second (`AT_CLKTCK` of this process's auxiliary vector), read
/// once.
fn clock_ticks() -> Result<f64> {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    if let Some(t) = TICKS.get() {
        return Ok(*t);
    }
    const AT_CLKTCK: u64 = 17;
    let auxv = std::fs::read("/proc/self/auxv").context("reading /proc/self/auxv")?;
    let ticks = auxv
        .chunks_exact(16)
        .map(|kv| {
            let word = |b: &[u8]| u64::from_ne_bytes(b.try_into().expect("8 bytes"));
            (word(&kv[..8]), word(&kv[8..]))
        })
        .find(|(k, _)| *k == AT_CLKTCK)
        .map(|(_, v)| v as f64)
        .context("no AT_CLKTCK in /proc/self/auxv")?;
    Ok(*TICKS.get_or_init(|| ticks))
}

/// The whole machine's CPU time so far, from the `cpu` line of `/proc/stat`: (busy, total) in
/// clock ticks; idle and iowait are not busy.
pub fn machine_cpu() -> Result<(f64, f64)> {
    let stat = std::fs::read_to_string("/proc/stat").context("reading /proc/stat")?;
    let line = stat
        .lines()
        .find(|l| l.starts_with("cpu "))
        .context("no cpu line in /proc/stat")?;
    let ticks: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .map(|v| v.parse().context("a number in /proc/stat"))
        .collect::<Result<_>>()?;
    let total: f64 = ticks.iter().take(8).sum();
    let idle = ticks.get(3).copied().unwrap_or(0.0) + ticks.get(4).copied().unwrap_or(0.0);
    Ok((total - idle, total))
}

/// The busy share (0..1) of the machine's CPU between two [`machine_cpu`] readings.
pub fn busy_between(a: (f64, f64), b: (f64, f64)) -> f64 {
    (b.0 - a.0) / (b.1 - a.1).max(1.0)
}

/// The parent of a process (field 4 of `/proc/<pid>/stat`).
pub fn parent(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn what_a_process_writes_is_counted_in_bytes_and_calls() {
        let me = std::process::id();
        let dir = tempfile::tempdir().unwrap();
        let before = super::usage(me).unwrap();
        for i in 0..10u8 {
            std::fs::write(dir.path().join(i.to_string()), [i; 10_000]).unwrap();
        }
        let d = super::usage(me).unwrap() - before;
        // Other test threads may write too, so at least what this one wrote.
        assert!(d.written_bytes >= 100_000.0, "{} bytes", d.written_bytes);
        assert!(d.write_calls >= 10.0, "{} calls", d.write_calls);
        let each = d.per(10.0);
        assert!(each.written_bytes >= 10_000.0 && each.write_calls >= 1.0);
    }

    #[test]
    fn cpu_time_grows_with_work_done_and_never_beyond_the_wall_clock() {
        let me = std::process::id();
        let cores = std::thread::available_parallelism().map_or(1, usize::from) as f64;
        let before = super::usage(me).unwrap().cpu_secs;
        let t = std::time::Instant::now();
        let mut x = 0u64;
        // Spin until the process has used 0.1 s more, however busy the machine is.
        let used = loop {
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
            let used = super::usage(me).unwrap().cpu_secs - before;
            if used >= 0.1 {
                break used;
            }
            assert!(
                t.elapsed().as_secs() < 20,
                "CPU time did not grow: {used} s"
            );
        };
        // In seconds, not ticks: no more than every core for the whole wait (+ a tick each).
        let wall = t.elapsed().as_secs_f64();
        assert!(used <= (wall + 0.02) * cores, "{used} s used in {wall} s");
    }
}
