//! This backend's own errors, with PostgreSQL's types in them; at the seam they become
//! [`callsign_storage::Error`], which carries none.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("postgres: {0}")]
    Postgres(#[from] tokio_postgres::Error),
    #[error("postgres pool: {0}")]
    Pool(String),
    #[error("group commit failed: {0}")]
    CommitFailed(String),
    /// A stored value the schema's CHECKs should have kept out.
    #[error("the database holds a value it should not: {0}")]
    Corrupt(String),
    /// The project is recovering: it numbers nothing (docs/RECOVERY.md).
    #[error("project {0} is recovering from a backup: it numbers no task until recovery ends")]
    Recovering(String),
}

pub type Result<T> = std::result::Result<T, DbError>;

impl From<deadpool_postgres::PoolError> for DbError {
    fn from(e: deadpool_postgres::PoolError) -> Self {
        DbError::Pool(e.to_string())
    }
}

impl From<DbError> for callsign_storage::Error {
    fn from(e: DbError) -> Self {
        match e {
            DbError::CommitFailed(s) => callsign_storage::Error::CommitFailed(s),
            DbError::Recovering(prefix) => callsign_storage::Error::Recovering { prefix },
            e => callsign_storage::Error::Database(e.to_string()),
        }
    }
}
