//! Where PostgreSQL's programs are, and which user runs them.

use std::ffi::OsString;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{io, Error, Result};

/// Debian installs each major version's programs here, off `PATH`.
const DEBIAN_LIB: &str = "/usr/lib/postgresql";

/// `initdb` and `pg_ctl`, and how to run them.
#[derive(Debug)]
pub(super) struct Tools {
    bin: PathBuf,
    /// As root: the `postgres` user's uid and gid; the programs run as it through `runuser`.
    server_user: Option<(u32, u32)>,
}

impl Tools {
    pub(super) fn find() -> Result<Self> {
        let bin = debian_bin(Path::new(DEBIAN_LIB))
            .or_else(|| {
                let path = std::env::var_os("PATH")?;
                std::env::split_paths(&path).find(|dir| has_programs(dir))
            })
            .ok_or_else(|| {
                Error::NotFound(format!(
                    "PostgreSQL's initdb and pg_ctl, in {DEBIAN_LIB}/*/bin or on PATH \
                     (Debian: apt-get install postgresql, or scripts/setup-debian.sh)"
                ))
            })?;
        let server_user = if running_as_root() {
            Some(postgres_user()?)
        } else {
            None
        };
        Ok(Self { bin, server_user })
    }

    /// The command line that runs `program` as the server's user.
    pub(super) fn argv(&self, program: &str) -> Vec<OsString> {
        let mut argv = Vec::new();
        if self.server_user.is_some() {
            argv.extend(super::os(&["runuser", "-u", "postgres", "--"]));
        }
        argv.push(self.bin.join(program).into_os_string());
        argv
    }

    pub(super) fn command(&self, program: &str) -> Command {
        let argv = self.argv(program);
        let mut command = Command::new(&argv[0]);
        command.args(&argv[1..]);
        command
    }

    /// As root, hands `dir` to the `postgres` user, which runs the server in it.
    pub(super) fn give_to_server_user(&self, dir: &Path) -> Result<()> {
        match self.server_user {
            Some((uid, gid)) => std::os::unix::fs::chown(dir, Some(uid), Some(gid))
                .map_err(io(format!("chown {} to postgres", dir.display()))),
            None => Ok(()),
        }
    }
}

/// The highest version's `bin` under Debian's `/usr/lib/postgresql/<version>/bin`.
fn debian_bin(lib: &Path) -> Option<PathBuf> {
    std::fs::read_dir(lib)
        .ok()?
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let version = version(&entry.file_name().to_string_lossy())?;
            let bin = entry.path().join("bin");
            has_programs(&bin).then_some((version, bin))
        })
        .max()
        .map(|(_, bin)| bin)
}

/// `"15"` → `[15]`, `"9.6"` → `[9, 6]`, so that 15 sorts above 9.6.
fn version(name: &str) -> Option<Vec<u32>> {
    name.split('.').map(|part| part.parse().ok()).collect()
}

fn has_programs(dir: &Path) -> bool {
    dir.join("initdb").is_file() && dir.join("pg_ctl").is_file()
}

/// `/proc/self` belongs to the process's effective user.
fn running_as_root() -> bool {
    match std::fs::metadata("/proc/self") {
        Ok(meta) => meta.uid() == 0,
        Err(_) => Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|out| out.stdout.trim_ascii() == b"0"),
    }
}

/// The `postgres` user's uid and gid (`getent passwd postgres`).
fn postgres_user() -> Result<(u32, u32)> {
    let missing = || {
        Error::NotFound(
            "a `postgres` user to run PostgreSQL as (initdb refuses to run as root)".to_owned(),
        )
    };
    let out = Command::new("getent")
        .args(["passwd", "postgres"])
        .output()
        .map_err(io("run getent passwd postgres"))?;
    let line = String::from_utf8_lossy(&out.stdout);
    let fields: Vec<&str> = line.trim().split(':').collect();
    match (fields.get(2), fields.get(3)) {
        (Some(uid), Some(gid)) => Ok((
            uid.parse().map_err(|_| missing())?,
            gid.parse().map_err(|_| missing())?,
        )),
        _ => Err(missing()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_numerically() {
        assert_eq!(version("15"), Some(vec![15]));
        assert_eq!(version("9.6"), Some(vec![9, 6]));
        assert_eq!(version("common"), None);
        assert!(version("15") > version("9.6"));
        assert!(version("16") > version("15"));
    }

    #[test]
    fn the_highest_debian_version_wins() {
        let lib = tempfile::tempdir().unwrap();
        for version in ["9.6", "15", "16", "notes"] {
            let bin = lib.path().join(version).join("bin");
            std::fs::create_dir_all(&bin).unwrap();
            // 16 is incomplete (no pg_ctl), so 15 is the highest usable one.
            for program in ["initdb", "pg_ctl"]
                .iter()
                .filter(|p| version != "16" || **p == "initdb")
            {
                std::fs::write(bin.join(program), "").unwrap();
            }
        }
        assert_eq!(debian_bin(lib.path()), Some(lib.path().join("15/bin")));
        assert_eq!(debian_bin(&lib.path().join("absent")), None);
    }
}
