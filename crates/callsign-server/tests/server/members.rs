//! Teams (issue 26): members, roles and removal. Route tests through `router(state)` on SQLite
//! and PostgreSQL, then the real binary: `member add|list|remove` while the server runs, and
//! on PostgreSQL a removal on one node reaching the tokens another node has cached.
use std::process::Command;

use axum::http::StatusCode;
use callsign_core::{MemberName, Role};
use callsign_storage_sqlite::alloc::{AddMember, NewMember};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::common::{app_on, create_account_in, eventually_async, task, Answer, Client, TestApp};
use crate::common::{TestServer, BIN};

async fn add(app: &TestApp, name: &str, role: Role) -> NewMember {
    let name = MemberName::parse(name).unwrap();
    let made = app
        .state
        .alloc
        .add_member(app.account.account_id, &name, role, "laptop");
    match made.await.unwrap() {
        AddMember::Added(m) => m,
        other => panic!("{other:?}"),
    }
}

fn refused(a: &Answer, status: StatusCode, code: &str, what: &str) {
    assert_eq!(
        (a.status, a.body["code"].as_str()),
        (status, Some(code)),
        "{what}: {}",
        a.body
    );
    assert_eq!(a.content_type, "application/problem+json", "{what}");
}

async fn roles_and_removal(backend: &str) {
    let Some(app) = app_on(backend, "SYN").await else {
        return;
    };
    let owner = app.account.token.clone();
    let bob = add(&app, "Bob", Role::Member).await.token;
    let carol = add(&app, "carol", Role::Owner).await.token;

    let me = app.call(&bob, "GET", "/v1/me", None, None).await;
    assert_eq!(me.body, json!({"name": "bob", "role": "member"}));
    let list = app.call(&bob, "GET", "/v1/members", None, None).await;
    assert_eq!(list.status, StatusCode::OK, "{}", list.body);
    assert_eq!(
        list.body,
        json!({"members": [
            {"name": "bob", "role": "member"},
            {"name": "carol", "role": "owner"},
            {"name": "owner", "role": "owner"},
        ]})
    );

    // A member works with tasks but manages nothing.
    let uuid = Uuid::new_v4();
    let path = format!("/v1/tasks/{uuid}");
    let made = app.call(&bob, "PUT", &path, Some("b1"), Some(task("bob's")));
    assert_eq!(made.await.status, StatusCode::CREATED);
    let a = app.call(
        &bob,
        "POST",
        "/v1/projects",
        None,
        Some(json!({"name": "Ops", "prefix": "OPS"})),
    );
    refused(
        &a.await,
        StatusCode::FORBIDDEN,
        "forbidden",
        "a member creates a project",
    );
    let a = app.call(
        &bob,
        "PATCH",
        "/v1/projects/SYN",
        None,
        Some(json!({"prefix": "SYX"})),
    );
    let a = a.await;
    refused(
        &a,
        StatusCode::FORBIDDEN,
        "forbidden",
        "a member renames a project",
    );
    assert!(
        a.body["detail"]
            .as_str()
            .unwrap()
            .contains("bob is a member"),
        "{}",
        a.body
    );
    let a = app
        .call(&bob, "DELETE", "/v1/members/carol", None, None)
        .await;
    refused(
        &a,
        StatusCode::FORBIDDEN,
        "forbidden",
        "a member removes a member",
    );
    let projects = app.call(&owner, "GET", "/v1/projects", None, None).await;
    assert_eq!(
        projects.body["projects"].as_array().unwrap().len(),
        1,
        "nothing was made"
    );
    let a = app.call(
        &carol,
        "POST",
        "/v1/projects",
        None,
        Some(json!({"name": "Ops", "prefix": "OPS"})),
    );
    assert_eq!(a.await.status, StatusCode::CREATED, "another owner may");

    // Removal: bob's token (cached by the requests above) is refused from the next request on.
    let a = app
        .call(&owner, "DELETE", "/v1/members/BOB", None, None)
        .await;
    assert_eq!(a.status, StatusCode::NO_CONTENT, "{}", a.body);
    let a = app.call(&bob, "GET", "/v1/projects", None, None).await;
    refused(
        &a,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
        "a removed member's token",
    );
    let a = app
        .call(&owner, "DELETE", "/v1/members/bob", None, None)
        .await;
    refused(
        &a,
        StatusCode::NOT_FOUND,
        "member_not_found",
        "removed already",
    );
    for name in ["nobody", "not%20a%20name"] {
        let path = format!("/v1/members/{name}");
        let a = app.call(&owner, "DELETE", &path, None, None).await;
        refused(&a, StatusCode::NOT_FOUND, "member_not_found", name);
    }
    let got = app
        .call(&carol, "GET", &format!("/v1/tasks/{uuid}"), None, None)
        .await;
    assert_eq!(got.status, StatusCode::OK, "bob's task stays");
    let list = app.call(&carol, "GET", "/v1/members", None, None).await;
    let names: Vec<&str> = list.body["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["carol", "owner"], "current members only");

    // The last owner stays.
    let a = app
        .call(&carol, "DELETE", "/v1/members/owner", None, None)
        .await;
    assert_eq!(a.status, StatusCode::NO_CONTENT);
    let a = app.call(&owner, "GET", "/v1/members", None, None).await;
    refused(
        &a,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
        "the removed owner",
    );
    let a = app
        .call(&carol, "DELETE", "/v1/members/carol", None, None)
        .await;
    refused(
        &a,
        StatusCode::CONFLICT,
        "last_owner",
        "the last owner removes herself",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roles_and_removal_on_sqlite() {
    roles_and_removal("sqlite").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roles_and_removal_on_postgres() {
    roles_and_removal("postgres").await;
}

/// `callsign-server ARGS… --account N`, which must succeed; its JSON.
fn admin(args: &[impl AsRef<std::ffi::OsStr> + std::fmt::Debug], account: i64) -> Value {
    let out = Command::new(BIN)
        .args(args)
        .args(["--account", &account.to_string()])
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The admin's view, through the binary, against servers on `database`: a member added while
/// they run works at once; removed while they run, their tokens are refused by every server
/// (`within` lets another node hear the removal); the list shows who was removed.
async fn admin_commands(database: &[&str], servers: &[TestServer], within: bool) {
    let (account, owner_token) = create_account_in(database, "SYN");
    let with = |cmd: &[&'static str]| -> Vec<String> {
        cmd.iter().chain(database).map(|s| s.to_string()).collect()
    };
    let bob = admin(
        &with(&["member", "add", "--name", "@Bob", "--device", "laptop"]),
        account,
    );
    assert_eq!(
        (bob["name"].as_str(), bob["role"].as_str()),
        (Some("bob"), Some("member"))
    );
    let phone = admin(
        &with(&["token", "create", "--member", "bob", "--device", "phone"]),
        account,
    );
    let tokens = [
        bob["token"].as_str().unwrap(),
        phone["token"].as_str().unwrap(),
    ];
    let clients: Vec<Client> = servers
        .iter()
        .flat_map(|s| tokens.map(|t| Client::new(&s.url, t)))
        .collect();
    for c in &clients {
        let (status, body) = c.get("/v1/members").await.unwrap();
        assert_eq!(status, 200, "{body}");
    }
    let owner = Client::new(&servers[0].url, &owner_token);
    let (status, _) = owner.get("/v1/members").await.unwrap();
    assert_eq!(status, 200, "the migrated first token is the owner's");

    let gone = admin(&with(&["member", "remove", "--name", "bob"]), account);
    assert_eq!(gone, json!({"removed": "bob", "tokens": 2}));
    for c in &clients {
        if within {
            eventually_async(5, "a removal reaches every node", || async {
                c.get("/v1/members").await.unwrap().0 == 401
            })
            .await;
        }
        assert_eq!(c.get("/v1/members").await.unwrap().0, 401, "{}", c.url);
    }
    let (status, _) = owner.get("/v1/members").await.unwrap();
    assert_eq!(status, 200, "the owner still works");
    let list = admin(&with(&["member", "list"]), account);
    let members = list["members"].as_array().unwrap();
    assert_eq!(members.len(), 2, "{list}");
    assert_eq!(members[0]["name"], "owner");
    assert_eq!(
        (members[1]["name"].as_str(), members[1]["tokens"].as_i64()),
        (Some("bob"), Some(0))
    );
    assert!(members[1]["removed_at"].as_i64().is_some(), "{list}");

    // The last owner cannot be removed; a taken name cannot be added again.
    for args in [
        &["member", "remove", "--name", "owner"][..],
        &["member", "add", "--name", "bob"][..],
        &["member", "add", "--name", "2bob"][..],
    ] {
        let out = Command::new(BIN)
            .args(with(args))
            .args(["--account", &account.to_string()])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("only owner")
                || err.contains("has or had")
                || err.contains("invalid member"),
            "{args:?}: {err}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_commands_while_the_server_runs_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(dir.path(), &[], &[]);
    let database = ["--data-dir", dir.path().to_str().unwrap()];
    admin_commands(&database, &[server], false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removal_reaches_every_node_on_postgres() {
    let Some(url) = crate::nodes::database("members").await else {
        return;
    };
    let database = ["--database", url.as_str()];
    let nodes: Vec<TestServer> = (0..2)
        .map(|_| TestServer::serve(&database, &[], &[]))
        .collect();
    admin_commands(&database, &nodes, true).await;

    // Through the API on one node: the other node's cached token goes too.
    let (account, owner_token) = create_account_in(&database, "OPS");
    let cat = admin(
        &[&["member", "add", "--name", "cat"][..], &database].concat(),
        account,
    );
    let cat_token = cat["token"].as_str().unwrap();
    let on_b = Client::new(&nodes[1].url, cat_token);
    assert_eq!(on_b.get("/v1/members").await.unwrap().0, 200);
    let owner = Client::new(&nodes[0].url, &owner_token);
    let res = owner
        .http
        .delete(format!("{}/v1/members/cat", owner.url))
        .bearer_auth(&owner.token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 204);
    let on_a = Client::new(&nodes[0].url, cat_token);
    assert_eq!(
        on_a.get("/v1/members").await.unwrap().0,
        401,
        "the node that removed"
    );
    eventually_async(5, "node B hears the removal", || async {
        on_b.get("/v1/members").await.unwrap().0 == 401
    })
    .await;
}

/// A PostgreSQL database from before teams: each account's tokens become its first owner's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_postgres_migration_gives_each_account_an_owner_who_holds_its_tokens() {
    let Some(url) = crate::nodes::database("members_migration").await else {
        return;
    };
    let pool = callsign_storage_postgres::pool(&url, 2).unwrap();
    callsign_storage_postgres::migrate_first(&pool, 6)
        .await
        .unwrap();
    let c = pool.get().await.unwrap();
    for (account, token) in [(1i64, "t1"), (1, "t2"), (2, "t3")] {
        c.execute(
            "INSERT INTO accounts (id, name, created_at) VALUES ($1, 'a', 0)
             ON CONFLICT DO NOTHING",
            &[&account],
        )
        .await
        .unwrap();
        c.execute(
            "INSERT INTO tokens (account_id, token_hash, device, created_at)
             VALUES ($1, $2, 'd', 0)",
            &[
                &account,
                &callsign_storage_sqlite::alloc::accounts::hash_token(token),
            ],
        )
        .await
        .unwrap();
    }
    drop(c);
    callsign_storage_postgres::migrate(&pool).await.unwrap();
    let alloc = callsign_storage_postgres::alloc::PgAlloc::new(
        pool,
        callsign_storage_postgres::alloc::LEASE,
    );
    use callsign_storage::AllocStore;
    for (account, token) in [(1, "t1"), (1, "t2"), (2, "t3")] {
        let hash = callsign_storage_sqlite::alloc::accounts::hash_token(token);
        let caller = alloc.caller_by_token_hash(&hash).await.unwrap().unwrap();
        assert_eq!(caller.account, account);
        assert_eq!((caller.name.as_str(), caller.role), ("owner", Role::Owner));
    }
    let listed = alloc.list_members(1).await.unwrap().unwrap();
    assert_eq!((listed.len(), listed[0].tokens), (1, 2));
}

async fn join(app: &TestApp, body: Value) -> Answer {
    app.call("", "POST", "/v1/join", None, Some(body)).await
}

async fn invites_and_joining(backend: &str) {
    let Some(app) = app_on(backend, "SYN").await else {
        return;
    };
    let owner = app.account.token.clone();
    let bob = add(&app, "bob", Role::Member).await.token;
    let a = app
        .call(&bob, "POST", "/v1/invites", None, Some(json!({})))
        .await;
    refused(
        &a,
        StatusCode::FORBIDDEN,
        "forbidden",
        "a member makes an invite",
    );
    for hours in [0, 169] {
        let body = json!({"expires_in_hours": hours});
        let a = app
            .call(&owner, "POST", "/v1/invites", None, Some(body))
            .await;
        refused(
            &a,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_body",
            "hours",
        );
    }
    let a = app
        .call(&owner, "POST", "/v1/invites", None, Some(json!({})))
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
    let code = a.body["code"].as_str().unwrap().to_owned();
    assert_eq!((code.len(), a.body["role"].as_str()), (19, Some("member")));
    let expires: chrono::DateTime<chrono::Utc> =
        a.body["expires_at"].as_str().unwrap().parse().unwrap();
    let hours = (expires - chrono::Utc::now()).num_minutes() as f64 / 60.0;
    assert!((23.9..=24.0).contains(&hours), "{hours} h");

    // Redeemed once, typed loosely; the new member's token works and they are listed.
    let loose = code.to_lowercase().replace('-', " ");
    let a = join(&app, json!({"code": loose, "name": "bob", "device": "pc"})).await;
    refused(&a, StatusCode::CONFLICT, "member_taken", "a taken name");
    let a = join(&app, json!({"code": loose, "name": "Dave", "device": "pc"})).await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
    assert_eq!(a.body["member"], json!({"name": "dave", "role": "member"}));
    let dave = a.body["token"].as_str().unwrap().to_owned();
    let list = app.call(&dave, "GET", "/v1/members", None, None).await;
    assert_eq!(list.status, StatusCode::OK);
    assert!(list.body["members"]
        .as_array()
        .unwrap()
        .contains(&json!({"name": "dave", "role": "member"})));
    let a = join(&app, json!({"code": code, "name": "erin"})).await;
    refused(&a, StatusCode::GONE, "invite_used", "a used code");
    assert!(
        a.body["detail"].as_str().unwrap().contains("ask an owner"),
        "{}",
        a.body
    );
    let a = join(&app, json!({"code": "0000-0000-0000-0000", "name": "erin"})).await;
    refused(
        &a,
        StatusCode::NOT_FOUND,
        "invite_not_found",
        "an unknown code",
    );
    let a = join(&app, json!({"code": "hello", "name": "erin"})).await;
    refused(
        &a,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_body",
        "not a code",
    );
    let a = join(&app, json!({"code": code, "name": "9lives"})).await;
    refused(
        &a,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_body",
        "not a name",
    );
    let a = join(
        &app,
        json!({"code": code, "name": "erin", "created_by": "x"}),
    )
    .await;
    refused(
        &a,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_body",
        "an unknown field",
    );

    // An owner's invite makes an owner.
    let body = json!({"role": "owner", "expires_in_hours": 1});
    let a = app
        .call(&owner, "POST", "/v1/invites", None, Some(body))
        .await;
    let a = join(&app, json!({"code": a.body["code"], "name": "erin"})).await;
    assert_eq!(a.body["member"]["role"], "owner", "{}", a.body);
    let erin = a.body["token"].as_str().unwrap().to_owned();
    let made = app.call(
        &erin,
        "POST",
        "/v1/projects",
        None,
        Some(json!({"name": "Ops", "prefix": "OPS"})),
    );
    assert_eq!(made.await.status, StatusCode::CREATED);

    // Guessing codes is limited like guessing tokens.
    let mut last = StatusCode::OK;
    for _ in 0..30 {
        last = join(
            &app,
            json!({"code": "0000-0000-0000-0001", "name": "mallory"}),
        )
        .await
        .status;
    }
    assert_eq!(last, StatusCode::TOO_MANY_REQUESTS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invites_and_joining_on_sqlite() {
    invites_and_joining("sqlite").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invites_and_joining_on_postgres() {
    invites_and_joining("postgres").await;
}

/// An expired code over HTTP: the invite's expiry is moved into the past in the database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_code_is_refused() {
    let app = app_on("sqlite", "SYN").await.unwrap();
    let owner = app.account.token.clone();
    let a = app
        .call(&owner, "POST", "/v1/invites", None, Some(json!({})))
        .await;
    let code = a.body["code"].as_str().unwrap().to_owned();
    let db = app.state.sqlite.clone().unwrap();
    db.write(|c| {
        c.execute("UPDATE invites SET expires_at = 0", [])
            .map_err(Into::into)
    })
    .await
    .unwrap();
    let a = join(&app, json!({"code": code, "name": "late"})).await;
    refused(&a, StatusCode::GONE, "invite_expired", "an expired code");
}

async fn who_created_and_who_is_assigned(backend: &str) {
    let Some(app) = app_on(backend, "SYN").await else {
        return;
    };
    let owner = app.account.token.clone();
    let bob = add(&app, "bob", Role::Member).await.token;
    let uuid = Uuid::new_v4();
    let path = format!("/v1/tasks/{uuid}");
    let body =
        json!({"project": "syn", "description": "Fix the login redirect", "assignee": "Owner"});
    let a = app
        .call(&bob, "PUT", &path, Some("c1"), Some(body.clone()))
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
    assert_eq!(
        (a.body["created_by"].as_str(), a.body["assignee"].as_str()),
        (Some("bob"), Some("owner"))
    );
    // The creator is the token's, never the body's; a replay answers the original creator.
    let mut spoof = body.clone();
    spoof["created_by"] = json!("owner");
    let other = format!("/v1/tasks/{}", Uuid::new_v4());
    let a = app.call(&bob, "PUT", &other, Some("c2"), Some(spoof));
    refused(
        &a.await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_body",
        "a body naming created_by",
    );
    let a = app.call(&owner, "PUT", &path, Some("c1"), Some(body)).await;
    assert!(a.replayed, "{}", a.body);
    assert_eq!(
        a.body["created_by"], "bob",
        "the replay's creator is the original one"
    );
    let got = app.call(&owner, "GET", "/v1/tasks/SYN-1", None, None).await;
    assert_eq!(got.body["created_by"], "bob");

    // Assigning: a member (any case), nobody else; null unassigns.
    let a = app
        .call(
            &owner,
            "PATCH",
            "/v1/tasks/SYN-1",
            Some("p1"),
            Some(json!({"assignee": "BOB"})),
        )
        .await;
    assert_eq!(
        (a.status, a.body["assignee"].as_str()),
        (StatusCode::OK, Some("bob")),
        "{}",
        a.body
    );
    let a = app
        .call(
            &owner,
            "PATCH",
            "/v1/tasks/SYN-1",
            Some("p2"),
            Some(json!({"assignee": "carol"})),
        )
        .await;
    refused(
        &a,
        StatusCode::UNPROCESSABLE_ENTITY,
        "unknown_member",
        "an unknown assignee",
    );
    let a = app
        .call(
            &owner,
            "PATCH",
            "/v1/tasks/SYN-1",
            Some("p3"),
            Some(json!({"assignee": null})),
        )
        .await;
    assert_eq!(a.body["assignee"], Value::Null, "{}", a.body);
    let a = app
        .call(
            &owner,
            "PUT",
            &format!("/v1/tasks/{}", Uuid::new_v4()),
            Some("c3"),
            Some(json!({"project": "SYN", "description": "x", "assignee": "carol"})),
        )
        .await;
    refused(
        &a,
        StatusCode::UNPROCESSABLE_ENTITY,
        "unknown_member",
        "a create for a stranger",
    );

    // A batch: each mutation on its own; every create stamped with the caller.
    let (u1, u2) = (Uuid::new_v4(), Uuid::new_v4());
    let batch = json!({"mutations": [
        {"op": "create", "uuid": u1, "idempotency_key": "b1", "fields": {"project": "SYN", "description": "one", "assignee": "bob"}},
        {"op": "create", "uuid": u2, "idempotency_key": "b2", "fields": {"project": "SYN", "description": "two", "assignee": "nobody"}},
    ]});
    let a = app.call(&bob, "POST", "/v1/sync", None, Some(batch)).await;
    let results = a.body["results"].as_array().unwrap();
    assert_eq!(results[0]["task"]["created_by"], "bob", "{}", a.body);
    assert_eq!(results[0]["task"]["assignee"], "bob");
    assert_eq!(results[1]["error"]["code"], "unknown_member", "{}", a.body);

    // Removed, bob still made them.
    let a = app
        .call(&owner, "DELETE", "/v1/members/bob", None, None)
        .await;
    assert_eq!(a.status, StatusCode::NO_CONTENT);
    let got = app.call(&owner, "GET", "/v1/tasks/SYN-1", None, None).await;
    assert_eq!(got.body["created_by"], "bob");
    let a = app
        .call(
            &owner,
            "PATCH",
            "/v1/tasks/SYN-1",
            Some("p4"),
            Some(json!({"assignee": "bob"})),
        )
        .await;
    refused(
        &a,
        StatusCode::UNPROCESSABLE_ENTITY,
        "unknown_member",
        "a removed member",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn who_created_and_who_is_assigned_on_sqlite() {
    who_created_and_who_is_assigned("sqlite").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn who_created_and_who_is_assigned_on_postgres() {
    who_created_and_who_is_assigned("postgres").await;
}
