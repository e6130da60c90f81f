//! Where the `import` section's time goes, measured in this process on the same file: the
//! importer alone (parse, plan, the create bodies; no server), then through an [`Engine`] on a
//! fresh server of the same team: `Engine::import_export` (what `callsign import` runs first:
//! parse, plan, the project, one transaction queueing every task), `sync_until_drained` until
//! every task is keyed (what it runs next), `Engine::import_progress` (its summary). Beside the
//! sync: the same number of plain tasks (a title each, `Engine::create_many`) drained the same
//! way into another fresh server, with the CPU time each side used.
use std::time::{Duration, Instant};

use anyhow::{ensure, Result};
use callsign_import::{build, plan, Format};
use callsign_sync::{Engine, ImportFormat, ImportRequest, Token};

use crate::figures::input;
use crate::jira_export::{self, Export};
use crate::server::{self, Server};
use crate::stats::Figure;
use crate::{med, metrics, proc};

/// One run's phases, in seconds.
pub struct Phases {
    parse: f64,
    plan: f64,
    build: f64,
    import_export: f64,
    sync: Synced,
    progress: f64,
    /// The same number of plain tasks, drained.
    plain: Synced,
}

/// One `sync_until_drained` until every task is keyed.
#[derive(Clone, Copy)]
struct Synced {
    secs: f64,
    /// CPU seconds per task: the server's from the sync's start until it settled (its
    /// background key writes counted), the engine's (this process) during the sync.
    server_cpu: f64,
    engine_cpu: f64,
}

pub async fn measure(e: &Export) -> Result<Phases> {
    let (parse, plan, build) = importer(e)?;
    let (import_export, sync, progress) = engine_import(e).await?;
    let plain = plain_drain(e.issues.len()).await?;
    Ok(Phases {
        parse,
        plan,
        build,
        import_export,
        sync,
        progress,
        plain,
    })
}

/// Parse, plan and the create bodies of the file, no server: seconds each.
fn importer(e: &Export) -> Result<(f64, f64, f64)> {
    let t = Instant::now();
    let issues = callsign_import::parse(Format::Jira, e.csv.as_bytes())?;
    let parse = t.elapsed().as_secs_f64();
    let team: Vec<plan::Member> = jira_export::TEAM
        .iter()
        .map(|n| plan::Member {
            name: (*n).into(),
            email: None,
        })
        .collect();
    let opts = plan::Options {
        keep_numbers: true,
        project: None,
    };
    let t = Instant::now();
    let p = plan::plan(&issues, &opts, &team, &[server::PREFIX.into()], &[])?;
    let plan = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let made = build::creates(Format::Jira, &issues, &p, &|_| None);
    let build = t.elapsed().as_secs_f64();
    ensure!(made.len() == e.issues.len(), "{} creates", made.len());
    Ok((parse, plan, build))
}

async fn logged_in(s: &Server) -> Result<(tempfile::TempDir, Engine)> {
    let home = tempfile::tempdir()?;
    let engine = Engine::open(home.path())?;
    engine
        .login(&s.url, Token::new(&s.token), Some("bench".into()))
        .await?;
    Ok((home, engine))
}

/// (seconds of `import_export`, the sync, seconds of `import_progress`).
async fn engine_import(e: &Export) -> Result<(f64, Synced, f64)> {
    let s = crate::import::team_server()?;
    let (_home, engine) = logged_in(&s).await?;
    let t = Instant::now();
    let outcome = engine
        .import_export(ImportRequest {
            format: ImportFormat::Jira,
            bytes: e.csv.clone().into_bytes(),
            keep_numbers: true,
            project: None,
            dry_run: false,
        })
        .await?;
    let import_export = t.elapsed().as_secs_f64();
    let sync = measured_sync(&engine, &s, e.issues.len()).await?;
    let t = Instant::now();
    let p = engine.import_progress(&outcome.uuids)?;
    let progress = t.elapsed().as_secs_f64();
    ensure!(
        p.keyed == e.issues.len() && p.failed.is_empty(),
        "in-process import: {p:?}"
    );
    Ok((import_export, sync, progress))
}

/// `n` plain tasks made offline, then drained.
async fn plain_drain(n: usize) -> Result<Synced> {
    let s = Server::start()?;
    let (_home, engine) = logged_in(&s).await?;
    engine.create_many((0..n).map(input).collect())?;
    let synced = measured_sync(&engine, &s, n).await?;
    let numbered = server::numbers(&s).await?.len();
    ensure!(numbered == n, "{numbered} of {n} plain tasks numbered");
    Ok(synced)
}

async fn measured_sync(engine: &Engine, s: &Server, n: usize) -> Result<Synced> {
    let me = std::process::id();
    let (server_before, me_before) = (proc::usage(s.pid())?, proc::usage(me)?);
    let t = Instant::now();
    engine.sync_until_drained(Duration::from_secs(600)).await?;
    let secs = t.elapsed().as_secs_f64();
    let engine_cpu = (proc::usage(me)? - me_before).cpu_secs;
    metrics::settle(&reqwest::Client::new(), s).await?;
    let server_cpu = (proc::usage(s.pid())? - server_before).cpu_secs;
    let k = n as f64;
    Ok(Synced {
        secs,
        server_cpu: server_cpu / k,
        engine_cpu: engine_cpu / k,
    })
}

/// The bound rows; `cli` are the same runs' `callsign import` seconds.
pub fn figures(n: usize, runs: &[Phases], cli: &[f64]) -> Vec<Figure> {
    let pick = |f: &dyn Fn(&Phases) -> f64| runs.iter().map(f).collect::<Vec<_>>();
    let m = |f: &dyn Fn(&Phases) -> f64| med(&pick(f));
    let rest: Vec<f64> = runs
        .iter()
        .zip(cli)
        .map(|(p, c)| c - p.import_export - p.sync.secs)
        .collect();
    vec![
        Figure::new(
            &format!("import: bound: parse + plan of the {n}-issue file in-process, no server"),
            "ms",
            pick(&|p| (p.parse + p.plan) * 1e3),
        )
        .baseline(format!(
            "parse {:.0} ms, plan {:.0} ms; the {n} create bodies {:.0} ms more",
            m(&|p| p.parse) * 1e3,
            m(&|p| p.plan) * 1e3,
            m(&|p| p.build) * 1e3
        )),
        Figure::new(
            "import: bound: `Engine::import_export` in-process (parse, plan, the project, one \
             transaction queueing every task)",
            "s",
            pick(&|p| p.import_export),
        ),
        Figure::new(
            "import: bound: then `sync_until_drained` in-process, until every task is keyed",
            "s",
            pick(&|p| p.sync.secs),
        )
        .baseline(format!(
            "{:.2} s for {n} plain tasks (a title each) drained the same way; the import's \
             took {:.1}× as long",
            m(&|p| p.plain.secs),
            m(&|p| p.sync.secs) / m(&|p| p.plain.secs)
        )),
        Figure::new(
            "import: bound: in that sync, the server's CPU per task (until settled)",
            "µs",
            pick(&|p| p.sync.server_cpu * 1e6),
        )
        .baseline(format!(
            "{:.0} µs a plain task",
            m(&|p| p.plain.server_cpu) * 1e6
        )),
        Figure::new(
            "import: bound: in that sync, the engine's CPU per task",
            "µs",
            pick(&|p| p.sync.engine_cpu * 1e6),
        )
        .baseline(format!(
            "{:.0} µs a plain task",
            m(&|p| p.plain.engine_cpu) * 1e6
        )),
        Figure::new(
            "import: bound: then `Engine::import_progress` of every task (the summary's count)",
            "s",
            pick(&|p| p.progress),
        )
        .baseline(format!(
            "`callsign import` less `import_export` and the sync above: {:.2} s",
            med(&rest)
        )),
    ]
}
