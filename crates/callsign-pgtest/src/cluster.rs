//! A throwaway PostgreSQL cluster: `initdb` into a temp dir, `pg_ctl start` on 127.0.0.1.
//!
//! Cleanup has one path: a watchdog shell, spawned before `initdb`, blocks reading a pipe whose
//! only write end this process holds. Dropping the [`Cluster`] closes it and waits for the
//! watchdog; a process that ends without dropping it (a `static`, a panic that aborts, SIGKILL)
//! closes it too, as the kernel closes every descriptor of an ending process. Either way the
//! watchdog runs `pg_ctl -m fast stop` and removes the dir. The write end is close-on-exec, so
//! no process this one starts keeps the cluster alive; the watchdog has a process group of its
//! own, so Ctrl-C in a terminal does not kill it before it has cleaned up.

use std::ffi::OsString;
use std::net::TcpListener;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{io, Error, Result, Server};

#[cfg(test)]
mod tests;
mod tools;

use tools::Tools;

/// How to start a [`Cluster`]. `Options::default()` suits tests; [`Options::benchmark`] suits
/// figures meant to say something about production.
#[derive(Clone, Debug)]
pub struct Options {
    /// PostgreSQL's `fsync`. Off by default: a test cluster is thrown away, so its commits need
    /// not survive a power cut. On for benchmarks (commit cost is part of what they measure).
    pub fsync: bool,
    /// PostgreSQL's `max_connections`. 200 by default: a test may run three server nodes, each
    /// with a pool. `shared_buffers` is left at PostgreSQL's default.
    pub max_connections: u32,
    /// Serve streaming replication, so that [`Cluster::standby_of`] can copy it: `wal_level =
    /// replica`, `max_wal_senders`, and a `replication` entry for 127.0.0.1 in `pg_hba.conf`
    /// (trusted, as every connection here). Off by default.
    pub replication: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            fsync: false,
            max_connections: 200,
            replication: false,
        }
    }
}

impl Options {
    /// Tests' options with `fsync` on, as a production server runs.
    pub fn benchmark() -> Self {
        Self {
            fsync: true,
            ..Self::default()
        }
    }

    /// Tests' options for a primary that a standby streams from ([`Options::replication`]).
    pub fn primary() -> Self {
        Self {
            replication: true,
            ..Self::default()
        }
    }
}

/// How long [`Cluster::start`] took, step by step.
#[derive(Clone, Copy, Debug)]
pub struct Timings {
    /// `initdb` (with `--no-sync`).
    pub initdb: Duration,
    /// `pg_ctl start -w`, until the server accepts connections.
    pub start: Duration,
}

/// A PostgreSQL cluster of this process, listening on `127.0.0.1:`[`port`](Self::port), every
/// connection trusted as any user. Dropping it stops the server and removes its dir.
#[derive(Debug)]
pub struct Cluster {
    server: Server,
    port: u16,
    dir: PathBuf,
    timings: Timings,
    tools: Tools,
    /// Held for its `Drop`, which stops the cluster and removes `dir`.
    _watchdog: Watchdog,
}

impl Cluster {
    /// Runs `initdb` and `pg_ctl start` with the highest PostgreSQL in `/usr/lib/postgresql/*/bin`
    /// (Debian's layout), else the one on `PATH`. Blocks for about a second.
    ///
    /// The port is one the kernel had free a moment before; if the server cannot start on it
    /// (another process took it meanwhile), it tries two more.
    pub fn start(options: Options) -> Result<Cluster> {
        let tools = Tools::find()?;
        let (dir, watchdog) = Self::make_dir(&tools)?;
        let data = dir.join("data");

        let began = Instant::now();
        let mut initdb = tools.command("initdb");
        initdb.arg("-D").arg(&data);
        initdb.args(["-A", "trust", "--no-sync", "-U", "postgres", "-E", "UTF8"]);
        initdb.arg("--locale=C").current_dir(&dir);
        run(initdb, "initdb", None)?;
        let initdb = began.elapsed();
        append_settings(&data.join("postgresql.conf"), &dir, &options)?;

        let (port, start) = start_on_a_free_port(&tools, &dir)?;
        Ok(Cluster {
            server: Server::new(local_url(port)),
            port,
            dir,
            timings: Timings { initdb, start },
            tools,
            _watchdog: watchdog,
        })
    }

    /// A hot standby of `primary` (started with [`Options::replication`]), streaming from it:
    /// `pg_basebackup -R` into a temp dir of its own, then `pg_ctl start` on another free port
    /// of 127.0.0.1. Read-only until [`promote`](Self::promote)d; dropping it stops it and
    /// removes its dir, as for any cluster. `timings().initdb` is the base backup's.
    pub fn standby_of(primary: &Cluster, options: Options) -> Result<Cluster> {
        let tools = Tools::find()?;
        let (dir, watchdog) = Self::make_dir(&tools)?;
        let data = dir.join("data");

        let began = Instant::now();
        let mut backup = tools.command("pg_basebackup");
        backup.arg("-D").arg(&data);
        backup.args([
            "-h",
            "127.0.0.1",
            "-p",
            &primary.port.to_string(),
            "-U",
            "postgres",
        ]);
        // -R: standby.signal and primary_conninfo; -c fast: no wait for a spread checkpoint.
        backup.args(["-R", "-X", "stream", "-c", "fast", "--no-sync"]);
        backup.current_dir(&dir);
        run(backup, "pg_basebackup", Some(&primary.dir.join("log")))?;
        let copied = began.elapsed();
        // The primary's settings came with the copy; these (its own socket dir) come later in
        // the file, so they win.
        let mut options = options;
        options.replication = false;
        append_settings(&data.join("postgresql.conf"), &dir, &options)?;

        let (port, start) = start_on_a_free_port(&tools, &dir)?;
        Ok(Cluster {
            server: Server::new(local_url(port)),
            port,
            dir,
            timings: Timings {
                initdb: copied,
                start,
            },
            tools,
            _watchdog: watchdog,
        })
    }

    /// A temp dir the server's user owns, with the watchdog that removes it.
    fn make_dir(tools: &Tools) -> Result<(PathBuf, Watchdog)> {
        let dir = tempfile::Builder::new()
            .prefix("callsign-pg-")
            .tempdir()
            .map_err(io("create a temp dir for PostgreSQL"))?
            .keep();
        let watchdog = match Watchdog::spawn(tools, &dir) {
            Ok(watchdog) => watchdog,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(e);
            }
        };
        // From here on the watchdog removes `dir`, whichever way the caller returns.
        tools.give_to_server_user(&dir)?;
        Ok((dir, watchdog))
    }

    /// Stops the server (`pg_ctl -m fast stop`): a clean shutdown. [`start_again`]
    /// (Self::start_again) starts it on the same port.
    pub fn stop(&self) -> Result<()> {
        self.pg_ctl(&["-m", "fast", "-w", "-t", "60", "stop"], "pg_ctl stop")
    }

    /// Kills the server as a crash would (`pg_ctl -m immediate stop`: no shutdown checkpoint;
    /// the next start runs crash recovery).
    pub fn kill(&self) -> Result<()> {
        self.pg_ctl(
            &["-m", "immediate", "-w", "-t", "60", "stop"],
            "pg_ctl kill",
        )
    }

    /// Starts a stopped server again on its port ([`port`](Self::port)), waiting (60 s at
    /// most) until it accepts connections.
    pub fn start_again(&self) -> Result<()> {
        let port = format!("-p {}", self.port);
        self.pg_ctl(&["-w", "-t", "60", "-o", &port, "start"], "pg_ctl start")
    }

    /// Promotes a standby to a primary (`pg_ctl promote -w`): it stops replaying and takes
    /// writes, on a timeline of its own.
    pub fn promote(&self) -> Result<()> {
        self.pg_ctl(&["-w", "-t", "60", "promote"], "pg_ctl promote")
    }

    /// Waits (`limit` at most) until this standby has replayed everything `primary` had
    /// written when called: `pg_last_wal_replay_lsn()` here reaches the primary's
    /// `pg_current_wal_lsn()`.
    pub fn wait_replayed(&self, primary: &Cluster, limit: Duration) -> Result<()> {
        let (primary_url, url) = (primary.url().to_owned(), self.url().to_owned());
        crate::server::block_on(async move {
            let target: String = query_one(&primary_url, "SELECT pg_current_wal_lsn()::text")
                .await?
                .get(0);
            let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await?;
            let connection = tokio::spawn(connection);
            let end = Instant::now() + limit;
            let result = loop {
                let replayed: bool = client
                    .query_one(
                        "SELECT COALESCE(pg_last_wal_replay_lsn() >= $1::text::pg_lsn, false)",
                        &[&target],
                    )
                    .await?
                    .get(0);
                if replayed {
                    break Ok(());
                }
                if Instant::now() > end {
                    break Err(Error::Timeout(format!(
                        "the standby on port {} had not replayed WAL up to {target} after {limit:?}",
                        url_port(&url)
                    )));
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            };
            drop(client);
            let _ = connection.await;
            result
        })
    }

    fn pg_ctl(&self, args: &[&str], what: &str) -> Result<()> {
        let mut command = self.tools.command("pg_ctl");
        command.arg("-D").arg(self.dir.join("data"));
        command.arg("-l").arg(self.dir.join("log"));
        command.args(args).current_dir(&self.dir);
        run(command, what, Some(&self.dir.join("log")))
    }

    /// The server, to make schemas and databases on.
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// `postgres://postgres@127.0.0.1:PORT/postgres`.
    pub fn url(&self) -> &str {
        self.server.url()
    }

    /// The TCP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The cluster's dir: `data/` (the data directory), `log` (the server log) and the Unix
    /// socket. Removed when the cluster stops.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// How long starting it took.
    pub fn timings(&self) -> Timings {
        self.timings
    }
}

/// Settings in `postgresql.conf` rather than on the command line: `pg_ctl -o` goes through a
/// shell, and the socket dir is a path.
fn append_settings(conf: &Path, dir: &Path, options: &Options) -> Result<()> {
    let socket_dir = dir.to_string_lossy().replace('\'', "''");
    let mut settings = format!(
        "\n# callsign-pgtest\nlisten_addresses = '127.0.0.1'\n\
         unix_socket_directories = '{socket_dir}'\nmax_connections = {}\n",
        options.max_connections
    );
    if !options.fsync {
        settings.push_str("fsync = off\n");
    }
    if options.replication {
        settings.push_str("wal_level = replica\nmax_wal_senders = 4\n");
        let hba = conf.with_file_name("pg_hba.conf");
        append(
            &hba,
            "\n# callsign-pgtest\nhost replication all 127.0.0.1/32 trust\n",
        )?;
    }
    append(conf, &settings)
}

fn append(path: &Path, text: &str) -> Result<()> {
    use std::io::Write as _;
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .map_err(io(format!("open {}", path.display())))?;
    file.write_all(text.as_bytes())
        .map_err(io(format!("write {}", path.display())))
}

fn free_port() -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(io("find a free port"))?;
    Ok(listener
        .local_addr()
        .map_err(io("find a free port"))?
        .port())
}

/// Starts the server in `dir` on a port the kernel had free a moment before, trying two more if
/// it cannot (another process took it meanwhile); the port, and how long starting took.
fn start_on_a_free_port(tools: &Tools, dir: &Path) -> Result<(u16, Duration)> {
    let began = Instant::now();
    let mut attempt = 1;
    loop {
        let port = free_port()?;
        let mut start = tools.command("pg_ctl");
        start
            .arg("-D")
            .arg(dir.join("data"))
            .arg("-l")
            .arg(dir.join("log"));
        start.args(["-w", "-t", "60", "-o", &format!("-p {port}"), "start"]);
        start.current_dir(dir);
        match run(start, "pg_ctl start", Some(&dir.join("log"))) {
            Ok(()) => return Ok((port, began.elapsed())),
            Err(e) if attempt == 3 => return Err(e),
            Err(_) => attempt += 1,
        }
    }
}

fn local_url(port: u16) -> String {
    format!("postgres://postgres@127.0.0.1:{port}/postgres")
}

fn url_port(url: &str) -> &str {
    url.rsplit_once(':')
        .and_then(|(_, rest)| rest.split('/').next())
        .unwrap_or("?")
}

async fn query_one(url: &str, sql: &str) -> Result<tokio_postgres::Row> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    let connection = tokio::spawn(connection);
    let row = client.query_one(sql, &[]).await;
    drop(client);
    let _ = connection.await;
    Ok(row?)
}

/// Runs a command to completion; on failure the error carries its output and, if given, the
/// last lines of the server log.
fn run(mut command: Command, what: &str, log: Option<&Path>) -> Result<()> {
    let out = command
        .stdin(Stdio::null())
        .output()
        .map_err(io(format!("run {what}")))?;
    if out.status.success() {
        return Ok(());
    }
    let mut output = String::from_utf8_lossy(&out.stderr).trim().to_owned();
    if let Some(log) = log.and_then(|log| std::fs::read_to_string(log).ok()) {
        let lines: Vec<&str> = log.lines().collect();
        let tail = lines[lines.len().saturating_sub(10)..].join("\n");
        output = format!("{output}\nserver log:\n{tail}");
    }
    Err(Error::Command {
        what: what.to_owned(),
        status: out.status,
        output,
    })
}

/// Stops the cluster and removes its dir when its pipe closes; see the module docs.
#[derive(Debug)]
struct Watchdog {
    child: Child,
    pipe: Option<ChildStdin>,
}

/// `$1` is the dir, the rest `pg_ctl`'s command (behind `runuser` as root).
const WATCHDOG: &str = r#"dir=$1; shift
read -r line
"$@" -D "$dir/data" -m fast -w -t 30 stop || "$@" -D "$dir/data" -m immediate -w stop
rm -rf -- "$dir""#;

impl Watchdog {
    fn spawn(tools: &Tools, dir: &Path) -> Result<Self> {
        let mut command = Command::new("sh");
        command.arg("-c").arg(WATCHDOG).arg("sh").arg(dir);
        command.args(tools.argv("pg_ctl"));
        command.current_dir("/").stdin(Stdio::piped());
        command.stdout(Stdio::null()).stderr(Stdio::null());
        command.process_group(0);
        let mut child = command
            .spawn()
            .map_err(io("spawn the PostgreSQL watchdog (sh)"))?;
        let pipe = child.stdin.take();
        Ok(Self { child, pipe })
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        drop(self.pipe.take());
        let _ = self.child.wait();
    }
}

/// Arguments as `Command` takes them.
fn os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}
