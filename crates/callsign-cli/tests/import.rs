//! `callsign import` through the real binary: stdin in, tasks in the data dir, all or nothing.
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// A fresh data dir, removed on drop.
struct DataDir(PathBuf);

impl DataDir {
    fn new(name: &str) -> DataDir {
        let dir =
            std::env::temp_dir().join(format!("callsign-cli-import-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        DataDir(dir)
    }
}

impl Drop for DataDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn callsign(dir: &Path, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_callsign"))
        .arg("--data-dir")
        .arg(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn listed(dir: &Path) -> Vec<Value> {
    let out = callsign(dir, &["--json", "list"], "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice::<Value>(&out.stdout)
        .unwrap()
        .as_array()
        .cloned()
        .unwrap()
}

#[test]
fn import_lines_then_json_lines_and_list_them_in_order() {
    let dir = DataDir::new("ok");
    let out = callsign(
        &dir.0,
        &["import", "--project", "ben"],
        "Buy milk\n\nCall the bank\n",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("imported 2 task(s)"));

    let jsonl = r#"{"description": "Ship it", "project": "OPS", "notes": "by Friday"}
{"description": "Falls back to the flag"}
"#;
    let out = callsign(
        &dir.0,
        &["--json", "import", "--jsonl", "--project", "BEN"],
        jsonl,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["imported"], 2);
    let uuids = report["uuids"].as_array().unwrap();

    let tasks = listed(&dir.0);
    let got: Vec<_> = tasks
        .iter()
        .map(|t| {
            (
                t["description"].as_str().unwrap(),
                t["project"].as_str().unwrap(),
                t["sync_state"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("Buy milk", "BEN", "provisional"),
            ("Call the bank", "BEN", "provisional"),
            ("Ship it", "OPS", "provisional"),
            ("Falls back to the flag", "BEN", "provisional"),
        ]
    );
    assert_eq!(tasks[2]["uuid"], uuids[0]);
    assert_eq!(tasks[2]["notes"], "by Friday");
}

#[test]
fn a_bad_line_imports_nothing_and_names_the_line() {
    let dir = DataDir::new("bad");
    let jsonl = "{\"description\": \"fine\", \"project\": \"BEN\"}\n\
                 {\"description\": \"fine too\", \"project\": \"1x\"}\n";
    let out = callsign(&dir.0, &["import", "--jsonl"], jsonl);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 2: project: invalid prefix"), "{err}");
    assert!(listed(&dir.0).is_empty(), "nothing imported");

    let out = callsign(
        &dir.0,
        &["import", "--jsonl", "--project", "BEN"],
        "{\"description\": \"ok\"}\n{oops\n",
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 2: "), "{err}");
    assert!(listed(&dir.0).is_empty(), "nothing imported");
}
