//! Imports through the API (issue 42): a create with `origin` is an owner's; a kept number
//! takes its very key, a key another task holds or a tracker's key imported already is
//! refused in `application/problem+json` before anything is numbered; a tracker's key that is
//! no key here (`#12`) resolves as typed.
use axum::http::StatusCode;
use callsign_core::{MemberName, Role};
use callsign_storage::AddMember;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::common::{Answer, TestApp};

fn imported(project: &str, tracker: &str, key: &str, keep: bool) -> Value {
    json!({"project": project, "description": format!("imported {key}"),
           "origin": {"tracker": tracker, "key": key}, "keep_number": keep})
}

fn refused(a: &Answer, status: StatusCode, code: &str) {
    assert_eq!(
        (a.status, a.body["code"].as_str()),
        (status, Some(code)),
        "{}",
        a.body
    );
    assert_eq!(a.content_type, "application/problem+json");
}

#[tokio::test]
async fn imports_are_an_owners_and_claim_only_free_keys() {
    let app = TestApp::new("SYN").await;
    let account = app.account.account_id;
    let token = app.account.token.clone();
    let create = |prefix: &'static str| {
        app.call(
            &token,
            "POST",
            "/v1/projects",
            None,
            Some(json!({"name": prefix, "prefix": prefix})),
        )
    };
    assert_eq!(create("ENG").await.status, StatusCode::CREATED);

    // A member who is no owner may not import.
    let name = MemberName::parse("mei").unwrap();
    let AddMember::Added(mei) = app
        .state
        .alloc
        .add_member(account, &name, Role::Member, "laptop")
        .await
        .unwrap()
    else {
        panic!("mei not added")
    };
    let path = format!("/v1/tasks/{}", Uuid::new_v4());
    let body = imported("ENG", "jira", "ENG-42", true);
    let a = app
        .call(&mei.token, "PUT", &path, Some("m"), Some(body.clone()))
        .await;
    refused(&a, StatusCode::FORBIDDEN, "forbidden");
    let plain = json!({"project": "ENG", "description": "mei's own"});
    let a = app
        .call(&mei.token, "PUT", &path, Some("m2"), Some(plain))
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
    assert_eq!(a.body["key"], "ENG-1");

    // The owner's kept number: its very key, the counter after it.
    let e42 = Uuid::new_v4();
    let a = app.put(e42, "i42", body.clone()).await;
    assert_eq!(
        (a.status, a.body["key"].as_str()),
        (StatusCode::CREATED, Some("ENG-42"))
    );
    assert_eq!(
        a.body["origin"],
        json!({"tracker": "jira", "key": "ENG-42"})
    );
    let a = app
        .put(
            Uuid::new_v4(),
            "next",
            json!({"project": "ENG", "description": "n"}),
        )
        .await;
    assert_eq!(a.body["key"], "ENG-43", "{}", a.body);
    // A number another task holds, a key imported already: refused, nothing numbered.
    let a = app
        .put(Uuid::new_v4(), "i1", imported("ENG", "jira", "ENG-1", true))
        .await;
    refused(&a, StatusCode::CONFLICT, "key_taken");
    let a = app
        .put(
            Uuid::new_v4(),
            "again",
            imported("ENG", "jira", "ENG-42", true),
        )
        .await;
    refused(&a, StatusCode::CONFLICT, "already_imported");
    assert!(
        a.body["detail"].as_str().unwrap().contains("ENG-42"),
        "{}",
        a.body
    );
    let a = app
        .put(
            Uuid::new_v4(),
            "next2",
            json!({"project": "ENG", "description": "n"}),
        )
        .await;
    assert_eq!(
        a.body["key"], "ENG-44",
        "refusals took no number: {}",
        a.body
    );
    // A tracker's key in a project's prefix, numbered elsewhere, would name two tasks.
    let a = app
        .put(
            Uuid::new_v4(),
            "eng7",
            imported("SYN", "linear", "ENG-7", false),
        )
        .await;
    refused(&a, StatusCode::CONFLICT, "key_taken");
    // A bad origin is a 422.
    let a = app
        .put(
            Uuid::new_v4(),
            "bad",
            imported("ENG", "trello", "ENG-9", true),
        )
        .await;
    refused(&a, StatusCode::UNPROCESSABLE_ENTITY, "invalid_body");

    // `#12` and a key of no project resolve as typed; the prefix is then no project's.
    let gh = Uuid::new_v4();
    let a = app
        .put(gh, "gh", imported("SYN", "github", "#12", false))
        .await;
    assert_eq!(
        (a.status, a.body["key"].as_str()),
        (StatusCode::CREATED, Some("SYN-1"))
    );
    let lin = Uuid::new_v4();
    app.put(lin, "lin", imported("SYN", "linear", "LIN-3", false))
        .await;
    for (r, want) in [
        ("%2312", gh),
        ("lin-3", lin),
        ("LIN%203", lin),
        ("eng-42", e42),
    ] {
        let a = app.get(r).await;
        assert_eq!(a.status, StatusCode::OK, "{r}: {}", a.body);
        assert_eq!(a.body["uuid"], want.to_string(), "{r}");
    }
    refused(
        &app.get("%2399").await,
        StatusCode::BAD_REQUEST,
        "invalid_ref",
    );
    refused(
        &app.get("LIN-4").await,
        StatusCode::NOT_FOUND,
        "unknown_prefix",
    );
    let a = create("LIN").await;
    refused(&a, StatusCode::CONFLICT, "prefix_taken");
    assert!(
        a.body["detail"].as_str().unwrap().contains("imported"),
        "{}",
        a.body
    );
}
