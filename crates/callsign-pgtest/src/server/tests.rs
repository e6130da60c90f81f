use std::time::Instant;

use super::*;
use crate::shared;
use crate::testing::{connect, text};

/// The schema a fresh schema's URL names.
fn schema_of(url: &str) -> &str {
    url.rsplit_once("search_path%3D")
        .expect("a search_path option")
        .1
}

#[test]
fn names_are_valid_identifiers() {
    let name = object_name("Sync: Tests/ÄÖ with a very long label indeed", 7);
    let pid = std::process::id();
    assert_eq!(name, format!("t_sync__tests____with_a_ve_{pid}_7"));
    assert!(name.len() <= 63);
    assert!(name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'));
}

#[test]
fn urls_gain_a_search_path_or_a_database() {
    let base = "postgres://postgres@127.0.0.1:5433/postgres";
    assert_eq!(
        with_search_path(base, "t_a_1_2"),
        format!("{base}?options=-c%20search_path%3Dt_a_1_2")
    );
    assert_eq!(
        with_search_path(&format!("{base}?connect_timeout=5"), "s"),
        format!("{base}?connect_timeout=5&options=-c%20search_path%3Ds")
    );
    for (url, want) in [
        (base, "postgres://postgres@127.0.0.1:5433/t_b"),
        ("postgres://u:p@h:1", "postgres://u:p@h:1/t_b"),
        (
            "postgresql://h/db?sslmode=disable",
            "postgresql://h/t_b?sslmode=disable",
        ),
    ] {
        assert_eq!(with_database(url, "t_b"), want, "{url}");
    }
    assert_eq!(percent_encode("a-Z_0.~ =/%"), "a-Z_0.~%20%3D%2F%25");
}

#[test]
fn only_postgres_urls_without_options_are_taken() {
    assert!(check_url("postgres://h/db").is_ok());
    assert!(check_url("postgresql://h/db?sslmode=disable").is_ok());
    for url in [
        "host=localhost user=postgres",
        "mysql://h/db",
        "postgres://h/db?options=-c%20work_mem%3D1MB",
        "postgres://h/db?sslmode=disable&options=x",
    ] {
        assert!(matches!(check_url(url), Err(Error::Url(_))), "{url}");
    }
}

#[tokio::test]
async fn each_schema_url_sees_only_its_own_tables() {
    let Some(pg) = shared() else { return };
    let began = Instant::now();
    let a = pg.fresh_schema("isolation a").await.unwrap();
    println!("fresh_schema: {:?}", began.elapsed());
    let b = pg.fresh_schema("isolation b").await.unwrap();
    assert_ne!(schema_of(&a), schema_of(&b));
    assert_eq!(
        text(&a, "SELECT current_schema()::text").await,
        schema_of(&a)
    );
    assert_eq!(
        text(&b, "SELECT current_schema()::text").await,
        schema_of(&b)
    );

    let client_a = connect(&a).await;
    client_a
        .batch_execute("CREATE TABLE notes (body text); INSERT INTO notes VALUES ('from a')")
        .await
        .unwrap();
    // Another connection to a's URL sees a's table, unqualified.
    assert_eq!(text(&a, "SELECT body FROM notes").await, "from a");
    // b's URL does not see it; b makes a table of the same name, empty, without conflict.
    let gone = "SELECT coalesce(to_regclass('notes')::text, 'none')";
    assert_eq!(text(&b, gone).await, "none");
    let client_b = connect(&b).await;
    client_b
        .batch_execute("CREATE TABLE notes (body text)")
        .await
        .unwrap();
    assert_eq!(text(&b, "SELECT count(*)::text FROM notes").await, "0");
    assert_eq!(text(&a, "SELECT count(*)::text FROM notes").await, "1");
    // Nor does the server's own URL (schema public).
    assert_eq!(text(pg.url(), gone).await, "none");
}

#[tokio::test]
async fn a_pool_built_from_the_url_uses_the_schema() {
    let Some(pg) = shared() else { return };
    let url = pg.fresh_schema("pool").await.unwrap();
    let config = deadpool_postgres::Config {
        url: Some(url.clone()),
        ..Default::default()
    };
    let pool = config
        .create_pool(Some(deadpool_postgres::Runtime::Tokio1), NoTls)
        .unwrap();
    // Three connections at once, so they are distinct ones.
    let mut clients = Vec::new();
    for _ in 0..3 {
        clients.push(pool.get().await.unwrap());
    }
    for client in &clients {
        let row = client.query_one("SHOW search_path", &[]).await.unwrap();
        assert_eq!(row.get::<_, String>(0), schema_of(&url));
    }
}

#[test]
fn blocking_variants_work_outside_a_runtime() {
    let Some(pg) = shared() else { return };
    let url = pg.fresh_schema_blocking("blocking").unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let schema = runtime.block_on(text(&url, "SELECT current_schema()::text"));
    assert_eq!(schema, schema_of(&url));
    assert!(pg.fresh_database_blocking("blocking").is_ok());
}

#[tokio::test]
async fn a_fresh_database_is_its_own() {
    let Some(pg) = shared() else { return };
    let began = Instant::now();
    let url = pg.fresh_database("whole db").await.unwrap();
    println!("fresh_database: {:?}", began.elapsed());
    let name = url.rsplit_once('/').unwrap().1;
    assert!(name.starts_with("t_whole_db_"));
    assert_eq!(text(&url, "SELECT current_database()::text").await, name);
    connect(&url)
        .await
        .batch_execute("CREATE TABLE only_here (x int)")
        .await
        .unwrap();
    let seen = "SELECT coalesce(to_regclass('only_here')::text, 'none')";
    assert_eq!(text(&url, seen).await, "only_here");
    assert_eq!(text(pg.url(), seen).await, "none");
}

#[tokio::test]
async fn names_taken_already_are_skipped() {
    let Some(pg) = shared() else { return };
    // Take the next 40 names for this label, as an earlier run on the same server might have.
    let first = NEXT.load(Ordering::Relaxed);
    let admin = connect(pg.url()).await;
    for n in first..first + 40 {
        let sql = format!("CREATE SCHEMA {}", object_name("taken", n));
        admin.batch_execute(&sql).await.unwrap();
    }
    let url = pg.fresh_schema("taken").await.unwrap();
    let n: u32 = schema_of(&url).rsplit_once('_').unwrap().1.parse().unwrap();
    assert!(
        n >= first + 40,
        "got {n}, taken were {first}..{}",
        first + 40
    );
}
