//! `sidekicks migrate`: moves an installation's state to another database (from the
//! embedded SQLite file to a PostgreSQL server), with the gateway stopped.

use anyhow::{Context, bail};

use crate::store::{Backend, Store, redact_url};

/// Opens `from` (it must exist; its migrations are applied, as a start of the gateway
/// would), opens or makes `to` with the same schema, copies every row and prints each
/// table's count. Nothing is written to `to` unless all of it is.
pub async fn migrate(from: &str, to: &str) -> anyhow::Result<()> {
    if from == to {
        bail!("--from and --to name the same database");
    }
    for url in [from, to] {
        if Backend::of_url(url).is_none() {
            bail!(
                "{} is neither sqlite://PATH nor postgres://USER@HOST/DATABASE",
                redact_url(url)
            );
        }
    }
    let source_url = existing(from);
    let source = Store::connect(&source_url)
        .await
        .with_context(|| format!("cannot open {}", redact_url(from)))?;
    let target = Store::connect(to)
        .await
        .with_context(|| format!("cannot open {}", redact_url(to)))?;
    let counts = source
        .copy_into(&target)
        .await
        .with_context(|| format!("nothing was copied into {}", redact_url(to)))?;
    for (table, rows) in &counts {
        println!("{table}: {rows}");
    }
    let total: i64 = counts.iter().map(|(_, rows)| rows).sum();
    println!(
        "copied {total} rows from {} to {}; point `store` at the new database before starting the gateway",
        redact_url(from),
        redact_url(to)
    );
    Ok(())
}

/// The source's URL, so that a SQLite file that is not there is an error rather than a new
/// empty database (`mode=rw` opens without creating).
fn existing(url: &str) -> String {
    if Backend::of_url(url) == Some(Backend::Sqlite) && !url.contains('?') {
        format!("{url}?mode=rw")
    } else {
        url.to_owned()
    }
}
