//! Who each key names after healing: every key the server ever assigned, old ones included, is
//! asked of the running server (`GET /v1/tasks/{key}`, the resolver every client uses) and of
//! each device's engine (`Engine::get`, which falls back to previous keys). The checker holds
//! the answers against the keys table.
use std::collections::{BTreeMap, BTreeSet};

use anyhow::Result;
use callsign_sync::Engine;

use crate::view::{self, Resolved, ServerStore};

/// Asks the server at `url` (with `token`) and every engine about every key of `account`.
pub fn ask(
    store: &ServerStore,
    account: i64,
    url: &str,
    token: &str,
    engines: &[Engine],
) -> Result<Resolved> {
    let keys: BTreeSet<String> = view::load(store, account, &[])?
        .server
        .keys
        .iter()
        .map(|k| k.key())
        .collect();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let server = rt.block_on(async {
        let http = reqwest::Client::new();
        let mut answers = BTreeMap::new();
        for key in &keys {
            let res = http
                .get(format!("{url}/v1/tasks/{key}"))
                .bearer_auth(token)
                .send()
                .await?;
            let answer = match res.status().is_success() {
                true => {
                    let task: serde_json::Value = res.json().await?;
                    let text = |f: &str| task[f].as_str().unwrap_or_default().to_owned();
                    Some((text("uuid"), text("key")))
                }
                false => None,
            };
            answers.insert(key.clone(), answer);
        }
        anyhow::Ok(answers)
    })?;
    let devices = engines
        .iter()
        .map(|e| {
            let found = |k: &String| e.get(k).ok().map(|t| t.uuid.to_string());
            keys.iter().map(|k| (k.clone(), found(k))).collect()
        })
        .collect();
    Ok(Resolved { server, devices })
}
