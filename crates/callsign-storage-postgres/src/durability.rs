//! How the database keeps an acknowledged commit through a failover: PostgreSQL's settings in
//! force for this server's sessions, read at start and logged (docs/OPERATIONS.md, "PostgreSQL
//! failover"). A commit is kept by a promoted standby only if it waited for that standby:
//! `synchronous_standby_names` names one and `synchronous_commit` is `on` or `remote_apply`
//! (flushed there) or `remote_write` (written there, lost if the standby's machine also fails).
//! Otherwise a failover can lose the last commits, and with them numbers devices hold; the
//! server's recovery (docs/RECOVERY.md) must then be declared.
use deadpool_postgres::Pool;

use crate::error::Result;

/// The replication settings in force for this server's sessions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Durability {
    pub synchronous_commit: String,
    pub synchronous_standby_names: String,
}

impl Durability {
    /// Whether every acknowledged commit is on a standby too (see the module docs).
    pub fn survives_failover(&self) -> bool {
        !self.synchronous_standby_names.trim().is_empty()
            && matches!(
                self.synchronous_commit.as_str(),
                "on" | "remote_apply" | "remote_write"
            )
    }

    /// One line for the start-up log.
    pub fn describe(&self) -> String {
        let (sc, names) = (
            &self.synchronous_commit,
            self.synchronous_standby_names.trim(),
        );
        if self.survives_failover() {
            format!(
                "synchronous replication (synchronous_commit={sc}, synchronous_standby_names={names:?}): \
                 an acknowledged key survives a failover to those standbys"
            )
        } else if names.is_empty() {
            format!(
                "no synchronous standby (synchronous_commit={sc}, synchronous_standby_names empty): \
                 a failover to an asynchronous standby can lose the last commits; declare it with \
                 `callsign-server recovery start` before the nodes serve again"
            )
        } else {
            format!(
                "synchronous_commit={sc} does not wait for the standbys {names:?}: a failover can \
                 lose the last commits; declare it with `callsign-server recovery start`"
            )
        }
    }
}

/// Reads the settings in force.
pub async fn durability(pool: &Pool) -> Result<Durability> {
    let c = pool.get().await?;
    let row = c
        .query_one(
            "SELECT current_setting('synchronous_commit'), \
                    current_setting('synchronous_standby_names')",
            &[],
        )
        .await?;
    Ok(Durability {
        synchronous_commit: row.get(0),
        synchronous_standby_names: row.get(1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(sc: &str, names: &str) -> Durability {
        Durability {
            synchronous_commit: sc.into(),
            synchronous_standby_names: names.into(),
        }
    }

    #[test]
    fn only_a_commit_that_waits_for_a_named_standby_survives_a_failover() {
        for (sc, names, survives) in [
            ("on", "", false),
            ("on", "standby1", true),
            ("remote_apply", "FIRST 1 (a, b)", true),
            ("remote_write", "ANY 1 (a, b)", true),
            ("local", "standby1", false),
            ("off", "standby1", false),
            ("on", "  ", false),
        ] {
            let got = d(sc, names);
            assert_eq!(got.survives_failover(), survives, "{got:?}");
            let line = got.describe();
            assert_eq!(line.contains("recovery start"), !survives, "{line}");
        }
    }

    #[tokio::test]
    async fn the_settings_in_force_are_read_from_the_server() {
        let Some(pg) = callsign_pgtest::shared() else {
            return;
        };
        let url = pg.fresh_schema("durability").await.unwrap();
        let pool = crate::pool(&url, 1).unwrap();
        let got = durability(&pool).await.unwrap();
        // The test cluster has no standby and PostgreSQL's default synchronous_commit.
        assert_eq!(got, d("on", ""));
        assert!(!got.survives_failover());
    }
}
