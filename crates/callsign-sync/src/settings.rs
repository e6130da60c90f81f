//! Settings: server URL, device name and default project live in the store's `kv` table; the
//! bearer token lives in its own file, `<data-dir>/token`, created with mode 0600 (readable by the
//! user only). The token never appears in logs or `Debug` output: [`Token`] redacts itself.
use std::fmt;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::store::Store;

pub const TOKEN_FILE: &str = "token";
const SERVER_URL: &str = "settings.server_url";
const DEVICE_NAME: &str = "settings.device_name";
const PROJECT: &str = "settings.project";

/// A bearer token. `Debug` and `Display` print `***`.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    pub fn new(s: impl Into<String>) -> Self {
        Token(s.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(***)")
    }
}

/// The user-visible settings (the token is set and read separately).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settings {
    pub server_url: Option<String>,
    pub device_name: Option<String>,
    /// The project prefix new tasks go to when none is given.
    pub project: Option<String>,
}

impl Settings {
    pub fn load(store: &Store) -> Result<Settings> {
        Ok(Settings {
            server_url: store.get(SERVER_URL)?,
            device_name: store.get(DEVICE_NAME)?,
            project: store.get(PROJECT)?,
        })
    }

    pub fn save(&self, store: &Store) -> Result<()> {
        if let Some(url) = &self.server_url {
            validate_url(url)?;
        }
        store.set(
            SERVER_URL,
            self.server_url.as_deref().map(|u| u.trim_end_matches('/')),
        )?;
        store.set(DEVICE_NAME, self.device_name.as_deref())?;
        store.set(PROJECT, self.project.as_deref())?;
        Ok(())
    }
}

pub(crate) fn validate_url(url: &str) -> Result<()> {
    if url.starts_with("http://") || url.starts_with("https://") {
        Ok(())
    } else {
        Err(Error::Invalid(format!(
            "server URL {url:?} must start with http:// or https://"
        )))
    }
}

pub fn load_token(data_dir: &Path) -> Result<Option<Token>> {
    match std::fs::read_to_string(data_dir.join(TOKEN_FILE)) {
        Ok(s) if !s.trim().is_empty() => Ok(Some(Token(s.trim().to_owned()))),
        Ok(_) => Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io("reading the token file", e)),
    }
}

/// Writes the token file (mode 0600 from creation on; never world-readable, not even briefly).
pub fn save_token(data_dir: &Path, token: &Token) -> Result<()> {
    let path = data_dir.join(TOKEN_FILE);
    let tmp = data_dir.join(format!("{TOKEN_FILE}.tmp"));
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    let ctx = |e| Error::io("writing the token file", e);
    let mut f = opts.open(&tmp).map_err(ctx)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        f.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(ctx)?;
    }
    f.write_all(token.0.as_bytes()).map_err(ctx)?;
    f.sync_all().map_err(ctx)?;
    std::fs::rename(&tmp, &path).map_err(ctx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_is_private_and_redacted() {
        let dir = tempfile::tempdir().unwrap();
        let t = Token::new("s3cret");
        save_token(dir.path(), &t).unwrap();
        assert_eq!(load_token(dir.path()).unwrap(), Some(t.clone()));
        assert!(!format!("{t:?}").contains("s3cret"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(TOKEN_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn settings_round_trip_and_url_checked() {
        let store = Store::in_memory().unwrap();
        let s = Settings {
            server_url: Some("http://127.0.0.1:1/".into()),
            device_name: Some("laptop".into()),
            project: Some("SYN".into()),
        };
        s.save(&store).unwrap();
        let back = Settings::load(&store).unwrap();
        assert_eq!(back.server_url.as_deref(), Some("http://127.0.0.1:1"));
        assert_eq!(back.project.as_deref(), Some("SYN"));
        let bad = Settings {
            server_url: Some("ftp://x".into()),
            ..Settings::default()
        };
        assert!(matches!(bad.save(&store), Err(Error::Invalid(_))));
    }
}
