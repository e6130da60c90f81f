//! PostgreSQL for the `pg-*` sections: one throwaway cluster with `fsync` on
//! (`callsign_pgtest::Options::benchmark()`) for the whole run, and what the tool reads from it:
//! a schema's numbers, pending key writes, the cluster's commit and WAL counters, its
//! processes' CPU, and the baseline, the raw rate of a single-row counter-update commit.
use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use callsign_pgtest::{Cluster, Options};
use tokio_postgres::{Client, NoTls};

use crate::proc::{self, Usage};
use crate::server::Backend;

/// The baseline's transaction, as the issue gives it.
const COUNTER_SQL: &str = "INSERT INTO bench_counter (id, last) VALUES (1, 1) \
     ON CONFLICT (id) DO UPDATE SET last = bench_counter.last + 1 RETURNING last";

/// How long backends get to exit (and so publish their statistics) after their connections
/// close, before the cluster's counters are read.
const STATS_FLUSH: Duration = Duration::from_millis(500);

/// The benchmark's cluster on 127.0.0.1. Dropping it stops PostgreSQL and removes its dir; if
/// this process ends any other way, callsign-pgtest's watchdog does.
pub struct Pg {
    cluster: Cluster,
}

/// The cluster's cumulative counters (`pg_stat_database`, `pg_stat_wal`).
#[derive(Clone, Copy, Debug)]
pub struct Counters {
    /// Transactions committed, every database.
    pub xact_commit: f64,
    /// WAL flushes to disk (`wal_sync`: fdatasync calls).
    pub wal_sync: f64,
}

impl Pg {
    pub fn start() -> Result<Pg> {
        let cluster = Cluster::start(Options::benchmark()).context("starting PostgreSQL")?;
        Ok(Pg { cluster })
    }

    /// The cluster's own URL (its `postgres` database).
    pub fn url(&self) -> &str {
        self.cluster.url()
    }

    /// Servers on this cluster, each in a fresh schema.
    pub fn backend(&self) -> Backend {
        Backend::Postgres(self.cluster.server().clone())
    }

    /// `PostgreSQL 15.x …, fsync on`, for the log.
    pub async fn describe(&self) -> Result<String> {
        let c = connect(self.cluster.url()).await?;
        let version: String = c.query_one("SELECT version()", &[]).await?.get(0);
        let fsync: String = c.query_one("SHOW fsync", &[]).await?.get(0);
        let sync: String = c.query_one("SHOW synchronous_commit", &[]).await?.get(0);
        Ok(format!(
            "{version}; fsync {fsync}, synchronous_commit {sync}"
        ))
    }

    /// Reads the counters. Backends publish their statistics when they exit or go idle, at
    /// most once a second: read after closing the connections measured (and [`STATS_FLUSH`]).
    pub async fn counters(&self) -> Result<Counters> {
        let c = connect(self.cluster.url()).await?;
        let row = c
            .query_one(
                "SELECT (SELECT sum(xact_commit) FROM pg_stat_database)::float8,
                        wal_sync::float8 FROM pg_stat_wal",
                &[],
            )
            .await?;
        Ok(Counters {
            xact_commit: row.get(0),
            wal_sync: row.get(1),
        })
    }

    /// What PostgreSQL's processes (the postmaster and every child) have used so far, by pid.
    pub fn usage(&self) -> Result<HashMap<u32, Usage>> {
        let pidfile = self.cluster.dir().join("data/postmaster.pid");
        let text = std::fs::read_to_string(&pidfile)
            .with_context(|| format!("reading {}", pidfile.display()))?;
        let postmaster: u32 = text.lines().next().context("postmaster.pid")?.parse()?;
        let mut out = HashMap::new();
        for entry in std::fs::read_dir("/proc")? {
            let Some(pid) = entry?.file_name().to_str().and_then(|n| n.parse().ok()) else {
                continue;
            };
            if pid == postmaster || proc::parent(pid) == Some(postmaster) {
                // A backend may exit while this reads it: it is left out.
                if let Ok(u) = proc::usage(pid) {
                    out.insert(pid, u);
                }
            }
        }
        Ok(out)
    }

    /// TCP segments carrying data sent so far to PostgreSQL on the connections open now
    /// (`data_segs_out` of `ss -ti`, every socket to the cluster's port): a round trip sends
    /// at least one; a pipelined batch of messages may share one.
    pub fn segments_sent(&self) -> Result<f64> {
        let port = self.cluster.port();
        let out = std::process::Command::new("ss")
            .args(["-tinH", "state", "established"])
            .arg(format!("( dport = :{port} )"))
            .output()
            .context("running ss")?;
        if !out.status.success() {
            bail!("ss: {}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(data_segs_out(&String::from_utf8_lossy(&out.stdout)))
    }

    /// `clients` connections, each committing `BEGIN; INSERT … ON CONFLICT (id) DO UPDATE SET
    /// last = bench_counter.last + 1 RETURNING last; COMMIT` on the one row of a fresh table
    /// for `secs`.
    pub async fn raw_counter_commits(&self, clients: usize, secs: f64) -> Result<RawPg> {
        let url = self.cluster.server().fresh_schema("raw").await?;
        connect(&url)
            .await?
            .batch_execute("CREATE TABLE bench_counter (id int PRIMARY KEY, last bigint NOT NULL)")
            .await?;
        let mut conns = Vec::with_capacity(clients);
        for _ in 0..clients {
            conns.push(connect(&url).await?);
        }
        // This process is the metered one: its connections are the clients.
        let meter = self.meter(vec![std::process::id()]).await?;
        let cpu0 = proc::machine_cpu()?;
        let t = Instant::now();
        let deadline = t + Duration::from_secs_f64(secs);
        let mut tasks = Vec::with_capacity(clients);
        for mut c in conns {
            tasks.push(tokio::spawn(async move {
                let stmt = c.prepare(COUNTER_SQL).await?;
                let mut n = 0u64;
                while Instant::now() < deadline {
                    let tx = c.transaction().await?;
                    tx.query_one(&stmt, &[]).await?;
                    tx.commit().await?;
                    n += 1;
                }
                anyhow::Ok((n, c))
            }));
        }
        let (mut n, mut open) = (0, Vec::with_capacity(clients));
        for task in tasks {
            let (k, c) = task.await??;
            n += k;
            open.push(c);
        }
        let elapsed = t.elapsed().as_secs_f64();
        let cpu1 = proc::machine_cpu()?;
        // Closing the connections lets their backends exit and publish their statistics.
        let spent = meter.finish(self, move || drop(open)).await?;
        let k = n.max(1) as f64;
        Ok(RawPg {
            per_s: n as f64 / elapsed,
            xact_per_commit: spent.xact / k,
            wal_syncs_per_commit: spent.wal_syncs / k,
            pg_per_commit: spent.pg.per(k),
            client_per_commit: spent.server.per(k),
            segments_per_commit: spent.segments / k,
            machine_busy: proc::busy_between(cpu0, cpu1),
        })
    }
}

/// What a server's nodes (or, for the baseline, this process) and PostgreSQL spend over a
/// stretch of work: started by [`Pg::meter`], read by [`Meter::finish`].
pub struct Meter {
    counters: Counters,
    pg: HashMap<u32, Usage>,
    nodes: Vec<u32>,
    server: Usage,
    segments: f64,
}

/// What [`Meter`] counted, in total.
#[derive(Clone, Copy)]
pub struct Spend {
    /// Transactions committed in the cluster.
    pub xact: f64,
    /// WAL flushes.
    pub wal_syncs: f64,
    /// TCP segments with data sent to PostgreSQL (≈ round trips).
    pub segments: f64,
    /// The processes metered: the nodes (for the baseline, this process).
    pub server: Usage,
    /// PostgreSQL's processes.
    pub pg: Usage,
}

impl Pg {
    /// Starts counting what the processes `nodes` and PostgreSQL spend.
    pub async fn meter(&self, nodes: Vec<u32>) -> Result<Meter> {
        let server = nodes_usage(&nodes)?;
        Ok(Meter {
            counters: self.counters().await?,
            pg: self.usage()?,
            nodes,
            server,
            segments: self.segments_sent()?,
        })
    }
}

fn nodes_usage(pids: &[u32]) -> Result<Usage> {
    pids.iter()
        .try_fold(Usage::default(), |sum, pid| Ok(sum + proc::usage(*pid)?))
}

impl Meter {
    /// Reads the processes while they run (an exited backend's CPU is not in /proc), then
    /// calls `stop`, which must close the metered connections, e.g. by stopping the nodes (so
    /// their backends exit and publish their statistics), then reads the counters.
    pub async fn finish(self, pg: &Pg, stop: impl FnOnce()) -> Result<Spend> {
        let server = nodes_usage(&self.nodes)? - self.server;
        let pg_used = used_since(&self.pg, &pg.usage()?);
        let segments = pg.segments_sent()? - self.segments;
        stop();
        tokio::time::sleep(STATS_FLUSH).await;
        let c = pg.counters().await?;
        Ok(Spend {
            xact: c.xact_commit - self.counters.xact_commit,
            wal_syncs: c.wal_sync - self.counters.wal_sync,
            segments,
            server,
            pg: pg_used,
        })
    }
}

/// One measurement of the baseline.
#[derive(Clone, Copy)]
pub struct RawPg {
    pub per_s: f64,
    pub xact_per_commit: f64,
    pub wal_syncs_per_commit: f64,
    /// PostgreSQL's processes, per commit.
    pub pg_per_commit: Usage,
    /// This process (the 64 connections), per commit.
    pub client_per_commit: Usage,
    /// TCP segments with data its connections sent to PostgreSQL, per commit.
    pub segments_per_commit: f64,
    /// The machine's busy CPU share meanwhile (0..1).
    pub machine_busy: f64,
}

/// What the processes in `after` used since `before` (a process new since then: all of it).
pub fn used_since(before: &HashMap<u32, Usage>, after: &HashMap<u32, Usage>) -> Usage {
    after.iter().fold(Usage::default(), |sum, (pid, u)| {
        sum + (*u - before.get(pid).copied().unwrap_or_default())
    })
}

/// A connection to `url`, its I/O on a task of its own (ending when the client is dropped).
pub async fn connect(url: &str) -> Result<Client> {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .context("connecting to PostgreSQL")?;
    tokio::spawn(connection);
    Ok(client)
}

/// The current numbers of project `prefix` in the schema of `url`.
pub async fn numbers(url: &str, prefix: &str) -> Result<Vec<i64>> {
    let c = connect(url).await?;
    let rows = c
        .query(
            "SELECT k.number FROM keys k JOIN projects p ON p.id = k.project_id
             WHERE p.prefix = $1 AND k.current ORDER BY k.number",
            &[&prefix],
        )
        .await?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// Waits until every key in the schema of `url` is written onto its task (`in_store`): the
/// server's work off the request path is done. Fails after a minute.
pub async fn settle(url: &str) -> Result<()> {
    let c = connect(url).await?;
    let t = Instant::now();
    loop {
        let left: i64 = c
            .query_one("SELECT count(*) FROM keys WHERE NOT in_store", &[])
            .await?
            .get(0);
        if left == 0 {
            return Ok(());
        }
        if t.elapsed() > Duration::from_secs(60) {
            bail!("{left} keys still not written onto their tasks after a minute");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The sum of every `data_segs_out:N` in `ss -ti` output.
fn data_segs_out(ss: &str) -> f64 {
    ss.split_whitespace()
        .filter_map(|w| w.strip_prefix("data_segs_out:"))
        .filter_map(|n| n.parse::<f64>().ok())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_summed_over_sockets() {
        let ss = "0 0 127.0.0.1:5000 127.0.0.1:6000\n\t cubic segs_out:40 data_segs_out:30\n\
                  0 0 127.0.0.1:5001 127.0.0.1:6000\n\t cubic data_segs_out:12 lastsnd:4\n";
        assert_eq!(data_segs_out(ss), 42.0);
        assert_eq!(data_segs_out(""), 0.0);
    }

    #[test]
    fn a_process_new_since_the_first_reading_counts_whole() {
        let u = |cpu_secs| Usage {
            cpu_secs,
            ..Usage::default()
        };
        let before = HashMap::from([(1, u(1.0)), (2, u(5.0))]);
        // 2 has exited (left out), 3 is new.
        let after = HashMap::from([(1, u(1.5)), (3, u(0.25))]);
        assert_eq!(used_since(&before, &after).cpu_secs, 0.75);
    }
}
