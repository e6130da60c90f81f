//! Prefixes that sound alike (`409 prefix_sounds_alike`, `callsign_core::alike`): creates and
//! renames through `router(state)`, on SQLite and on PostgreSQL (skipped without it, outside
//! CI), since the check reads the account's projects through the storage trait.
use axum::http::StatusCode;
use serde_json::{json, Value};

use crate::common::{app_on, Answer, TestApp};

impl TestApp {
    async fn new_project(&self, body: Value) -> Answer {
        let token = self.account.token.clone();
        self.call(&token, "POST", "/v1/projects", None, Some(body))
            .await
    }

    async fn patch_project(&self, prefix: &str, body: Value) -> Answer {
        let token = self.account.token.clone();
        let path = format!("/v1/projects/{prefix}");
        self.call(&token, "PATCH", &path, None, Some(body)).await
    }

    async fn prefixes(&self) -> Vec<String> {
        let token = self.account.token.clone();
        let list = self.call(&token, "GET", "/v1/projects", None, None).await;
        let projects = list.body["projects"].as_array().unwrap();
        projects
            .iter()
            .map(|p| p["prefix"].as_str().unwrap().to_owned())
            .collect()
    }
}

fn refused_alike(a: &Answer, what: &str) -> String {
    assert_eq!(
        (a.status, a.body["code"].as_str()),
        (StatusCode::CONFLICT, Some("prefix_sounds_alike")),
        "{what}: {}",
        a.body
    );
    assert_eq!(a.content_type, "application/problem+json");
    a.body["detail"].as_str().unwrap().to_owned()
}

async fn creates_are_refused_and_allowed(backend: &str) {
    let Some(app) = app_on(backend, "SYN").await else {
        return;
    };
    let sin = app
        .new_project(json!({"name": "Sin bin", "prefix": "sin"}))
        .await;
    let detail = refused_alike(&sin, "SIN beside SYN");
    for says in ["SIN", "SYN", "\"Project\"", "allow_similar"] {
        assert!(detail.contains(says), "{says} in {detail}");
    }
    // Any other answer for pairs that sound different, and the same prefix stays prefix_taken.
    for (prefix, status, code) in [
        ("OPS", 201, None),
        ("DEV", 201, None),
        ("WEB", 201, None),
        ("API", 201, None),
        ("DEF", 409, Some("prefix_sounds_alike")),
        ("syn", 409, Some("prefix_taken")),
    ] {
        let a = app
            .new_project(json!({"name": prefix, "prefix": prefix}))
            .await;
        assert_eq!(
            (a.status.as_u16(), a.body["code"].as_str()),
            (status, code),
            "{prefix}: {}",
            a.body
        );
    }
    assert_eq!(app.prefixes().await, ["API", "DEV", "OPS", "SYN", "WEB"]);
    let def = app
        .new_project(json!({"name": "Defs", "prefix": "DEF"}))
        .await;
    assert!(refused_alike(&def, "DEF beside DEV").contains("\"DEV\""));

    // The request that says so takes it.
    let sin = json!({"name": "Sin bin", "prefix": "SIN", "allow_similar": true});
    let made = app.new_project(sin).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    assert_eq!(made.body["prefix"], "SIN");
    let not_bool = json!({"name": "x", "prefix": "SUN", "allow_similar": "yes"});
    assert_eq!(
        app.new_project(not_bool).await.status,
        StatusCode::UNPROCESSABLE_ENTITY
    );
}

#[tokio::test]
async fn a_prefix_that_sounds_like_anothers_is_refused_unless_allowed_sqlite() {
    creates_are_refused_and_allowed("sqlite").await;
}

#[tokio::test]
async fn a_prefix_that_sounds_like_anothers_is_refused_unless_allowed_postgres() {
    creates_are_refused_and_allowed("postgres").await;
}

async fn renames_are_checked_too(backend: &str) {
    let Some(app) = app_on(backend, "SYN").await else {
        return;
    };
    let ops = app
        .new_project(json!({"name": "Ops", "prefix": "OPS"}))
        .await;
    assert_eq!(ops.status, StatusCode::CREATED);
    // A rename to a prefix that sounds like another project's.
    let a = app.patch_project("OPS", json!({"prefix": "SIN"})).await;
    refused_alike(&a, "OPS to SIN beside SYN");
    // A project's own prefix is not "another project's": SYN may become SYM (spelled alike).
    let a = app.patch_project("SYN", json!({"prefix": "SYM"})).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    // SYN is still said aloud (its old keys still name tasks): a new SIN is refused, naming
    // the project that had it.
    let sin = app
        .new_project(json!({"name": "Sin", "prefix": "SIN"}))
        .await;
    let detail = refused_alike(&sin, "SIN beside the old SYN");
    assert!(
        detail.contains("SYN") && detail.contains("now SYM") && detail.contains("rename"),
        "{detail}"
    );
    let a = app.patch_project("OPS", json!({"prefix": "SIN"})).await;
    refused_alike(&a, "OPS to SIN beside the old SYN");
    // A name alone is no prefix to check; a rename that says so goes through.
    let a = app
        .patch_project("OPS", json!({"name": "Operations"}))
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let allowed = json!({"prefix": "SIN", "allow_similar": true});
    let a = app.patch_project("OPS", allowed).await;
    assert_eq!(
        (a.status, a.body["prefix"].as_str()),
        (StatusCode::OK, Some("SIN")),
        "{}",
        a.body
    );
    // A rename of a prefix that is no project's now is still not found, not a sounds-alike.
    let a = app.patch_project("OPS", json!({"prefix": "SYN"})).await;
    assert_eq!(a.body["code"], "project_not_found", "{}", a.body);
}

#[tokio::test]
async fn a_rename_to_a_prefix_that_sounds_like_anothers_is_refused_unless_allowed_sqlite() {
    renames_are_checked_too("sqlite").await;
}

#[tokio::test]
async fn a_rename_to_a_prefix_that_sounds_like_anothers_is_refused_unless_allowed_postgres() {
    renames_are_checked_too("postgres").await;
}

/// The OpenAPI document states the rule on both operations, documents the 409 code, and has
/// `allow_similar` as an optional boolean of both bodies (schemathesis checks against it).
#[tokio::test]
async fn the_openapi_document_states_the_rule() {
    let app = TestApp::new("SYN").await;
    let doc = app.call("", "GET", "/openapi.json", None, None).await.body;
    for (path, method) in [("/v1/projects", "post"), ("/v1/projects/{prefix}", "patch")] {
        let op = &doc["paths"][path][method];
        let rule = op["description"].as_str().unwrap_or_default();
        for says in ["prefix_sounds_alike", "allow_similar", "`SIN` and", "rhyme"] {
            assert!(rule.contains(says), "{method} {path}: {says:?} in {rule}");
        }
        let conflict = op["responses"]["409"]["description"].as_str().unwrap();
        assert!(conflict.contains("prefix_sounds_alike"), "{conflict}");
    }
    for schema in ["NewProject", "ProjectPatch"] {
        let s = &doc["components"]["schemas"][schema];
        assert_eq!(s["properties"]["allow_similar"]["type"], "boolean", "{s}");
        let required = s["required"].as_array().cloned().unwrap_or_default();
        assert!(!required.contains(&json!("allow_similar")), "{s}");
    }
    let codes = &doc["components"]["schemas"]["ErrorCode"]["enum"];
    assert!(
        codes
            .as_array()
            .is_some_and(|c| c.contains(&json!("prefix_sounds_alike"))),
        "{codes}"
    );
}
