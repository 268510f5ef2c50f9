//! The TPC-C-like data set of paper section 5.4: TPC-C's `customer` table (about 600-byte rows) with a
//! secondary index on `c_zip`, in a database of 4 KiB pages, plus TPC-C's `district` table for joins.
//!
//! Rows follow TPC-C's clause 4.3.3.1: 3,000 customers per district, 10 districts per warehouse, random
//! zip codes (four random digits then "11111"), `c_data` of 300 to 500 random characters. Rows are inserted
//! in primary-key order, so the zip index points into the table in random order, which is what makes
//! `SELECT * FROM customer ORDER BY c_zip` seek on a disk.
//!
//! Deviations: the row count is given directly instead of as a number of warehouses (the last warehouse may
//! be partial); `c_last` draws its syllable number uniformly instead of with NURand; the random source is
//! seeded so that a data set can be made again byte for byte. Besides the zip index the generator builds
//! TPC-C's other customer index, on (c_w_id, c_d_id, c_last, c_first), so tests can scan a second index.

use std::path::Path;

use anyhow::{bail, Context, Result};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use rusqlite::{params, Connection};

/// SQLite page size of the data set, as in the paper ("4KB pages ... to match the storage unit").
pub const PAGE_SIZE: u32 = 4096;
/// Customers per district (TPC-C).
const CUSTOMERS_PER_DISTRICT: u64 = 3000;
/// Districts per warehouse (TPC-C).
const DISTRICTS_PER_WAREHOUSE: u64 = 10;
/// Rows inserted between two progress reports.
const PROGRESS_STEP: u64 = 10_000;

/// The schema: TPC-C's customer and district tables.
const SCHEMA: &str = "
CREATE TABLE customer (
    c_id INTEGER NOT NULL, c_d_id INTEGER NOT NULL, c_w_id INTEGER NOT NULL,
    c_first VARCHAR(16), c_middle CHAR(2), c_last VARCHAR(16),
    c_street_1 VARCHAR(20), c_street_2 VARCHAR(20), c_city VARCHAR(20), c_state CHAR(2), c_zip CHAR(9),
    c_phone CHAR(16), c_since TIMESTAMP, c_credit CHAR(2), c_credit_lim DECIMAL(12,2),
    c_discount DECIMAL(4,4), c_balance DECIMAL(12,2), c_ytd_payment DECIMAL(12,2),
    c_payment_cnt INTEGER, c_delivery_cnt INTEGER, c_data VARCHAR(500),
    PRIMARY KEY (c_w_id, c_d_id, c_id));
CREATE TABLE district (
    d_id INTEGER NOT NULL, d_w_id INTEGER NOT NULL, d_name VARCHAR(10),
    d_street_1 VARCHAR(20), d_street_2 VARCHAR(20), d_city VARCHAR(20), d_state CHAR(2), d_zip CHAR(9),
    d_tax DECIMAL(4,4), d_ytd DECIMAL(12,2), d_next_o_id INTEGER,
    PRIMARY KEY (d_w_id, d_id));";

/// The indexes, built after the rows are in (faster than maintaining them row by row).
const INDEXES: &str = "
CREATE INDEX customer_zip ON customer (c_zip);
CREATE INDEX customer_last ON customer (c_w_id, c_d_id, c_last, c_first);";

/// TPC-C's syllables for `c_last` (clause 4.3.2.3).
const SYLLABLES: [&str; 10] = [
    "BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING",
];

/// What to generate.
#[derive(Debug, Clone)]
pub struct GenOptions {
    /// Number of customer rows.
    pub rows: u64,
    /// Seed of the random source.
    pub seed: u64,
}

/// Writes a new TPC-C-like database to `out` (which must not exist yet). `progress` is called with the
/// number of customer rows inserted so far, every few thousand rows and once at the end.
/// Returns the size of the file in bytes. Errors name the file.
pub fn generate(out: &Path, opts: &GenOptions, mut progress: impl FnMut(u64)) -> Result<u64> {
    if opts.rows == 0 {
        bail!("--rows must be at least 1");
    }
    if out.exists() {
        bail!(
            "{} already exists; remove it or choose another --out",
            out.display()
        );
    }
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty());
    if parent.is_some_and(|dir| !dir.is_dir()) {
        bail!(
            "{} is not a directory; create it first or choose another --out",
            parent.unwrap_or(out).display()
        );
    }
    let conn = Connection::open(out).with_context(|| format!("creating {}", out.display()))?;
    fill(&conn, opts, &mut progress).with_context(|| format!("generating {}", out.display()))?;
    drop(conn);
    Ok(std::fs::metadata(out)?.len())
}

fn fill(conn: &Connection, opts: &GenOptions, progress: &mut impl FnMut(u64)) -> Result<()> {
    conn.execute_batch(&format!(
        "PRAGMA page_size = {PAGE_SIZE}; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;"
    ))?;
    conn.execute_batch(SCHEMA)?;
    let mut rng = StdRng::seed_from_u64(opts.seed);
    conn.execute_batch("BEGIN")?;
    insert_customers(conn, opts.rows, &mut rng, progress)?;
    insert_districts(conn, warehouses(opts.rows), &mut rng)?;
    conn.execute_batch("COMMIT")?;
    conn.execute_batch(INDEXES)?;
    progress(opts.rows);
    Ok(())
}

/// Number of warehouses that `rows` customers span.
fn warehouses(rows: u64) -> u64 {
    rows.div_ceil(CUSTOMERS_PER_DISTRICT * DISTRICTS_PER_WAREHOUSE)
}

fn insert_customers(
    conn: &Connection,
    rows: u64,
    rng: &mut StdRng,
    progress: &mut impl FnMut(u64),
) -> Result<()> {
    let mut stmt = conn.prepare(
        "INSERT INTO customer VALUES (?1, ?2, ?3, ?4, 'OE', ?5, ?6, ?7, ?8, ?9, ?10, ?11,
         '2009-06-14 12:00:00', ?12, 50000.00, ?13, -10.00, 10.00, 1, 0, ?14)",
    )?;
    for i in 0..rows {
        let c_id = sql_int(i % CUSTOMERS_PER_DISTRICT + 1)?;
        let d_id = sql_int((i / CUSTOMERS_PER_DISTRICT) % DISTRICTS_PER_WAREHOUSE + 1)?;
        let w_id = sql_int(i / (CUSTOMERS_PER_DISTRICT * DISTRICTS_PER_WAREHOUSE) + 1)?;
        let credit = if rng.random_ratio(1, 10) { "BC" } else { "GC" };
        stmt.execute(params![
            c_id,
            d_id,
            w_id,
            alnum(rng, 8, 16),
            last_name(rng.random_range(0..1000)),
            alnum(rng, 10, 20),
            alnum(rng, 10, 20),
            alnum(rng, 10, 20),
            letters(rng, 2),
            zip(rng),
            digits(rng, 16),
            credit,
            f64::from(rng.random_range(0..=5000u32)) / 10000.0,
            alnum(rng, 300, 500),
        ])?;
        if (i + 1) % PROGRESS_STEP == 0 {
            progress(i + 1);
        }
    }
    Ok(())
}

fn insert_districts(conn: &Connection, warehouses: u64, rng: &mut StdRng) -> Result<()> {
    let mut stmt = conn.prepare(
        "INSERT INTO district VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 30000.00, 3001)",
    )?;
    for w_id in 1..=warehouses {
        for d_id in 1..=DISTRICTS_PER_WAREHOUSE {
            stmt.execute(params![
                sql_int(d_id)?,
                sql_int(w_id)?,
                alnum(rng, 6, 10),
                alnum(rng, 10, 20),
                alnum(rng, 10, 20),
                alnum(rng, 10, 20),
                letters(rng, 2),
                zip(rng),
                f64::from(rng.random_range(0..=2000u32)) / 10000.0,
            ])?;
        }
    }
    Ok(())
}

/// TPC-C's last name for a number in 0..1000: three syllables chosen by its decimal digits.
pub fn last_name(n: u32) -> String {
    let digit = |d: u32| SYLLABLES[(d % 10) as usize];
    format!("{}{}{}", digit(n / 100), digit(n / 10), digit(n))
}

/// TPC-C's zip code: four random digits followed by "11111".
fn zip(rng: &mut StdRng) -> String {
    format!("{:04}11111", rng.random_range(0..10_000))
}

fn alnum(rng: &mut StdRng, min: usize, max: usize) -> String {
    const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let len = rng.random_range(min..=max);
    random_string(rng, CHARS, len)
}

/// SQLite integers are signed 64-bit.
fn sql_int(n: u64) -> Result<i64> {
    i64::try_from(n).context("row number exceeds SQLite's integer range")
}

fn letters(rng: &mut StdRng, len: usize) -> String {
    random_string(rng, b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", len)
}

fn digits(rng: &mut StdRng, len: usize) -> String {
    random_string(rng, b"0123456789", len)
}

fn random_string(rng: &mut StdRng, chars: &[u8], len: usize) -> String {
    (0..len)
        .map(|_| char::from(chars[rng.random_range(0..chars.len())]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_name_follows_tpcc_syllables() {
        // TPC-C clause 4.3.2.3 worked example: 371 -> PRI CALLY OUGHT.
        assert_eq!(last_name(371), "PRICALLYOUGHT");
        assert_eq!(last_name(0), "BARBARBAR");
    }

    #[test]
    fn generated_database_has_tpcc_shape() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let mut reports = Vec::new();
        let size = generate(
            &path,
            &GenOptions {
                rows: 12_000,
                seed: 1,
            },
            |n| reports.push(n),
        )
        .unwrap();
        assert_eq!(reports.last(), Some(&12_000));
        let conn = Connection::open(&path).unwrap();
        let page_size: u32 = conn
            .query_row("PRAGMA page_size", [], |r| r.get(0))
            .unwrap();
        assert_eq!(page_size, PAGE_SIZE);
        let (rows, avg): (i64, f64) = conn
            .query_row(
                "SELECT count(*), avg(length(c_data) + length(c_first) + length(c_last) + 120) FROM customer",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(rows, 12_000);
        assert!(
            (500.0..700.0).contains(&avg),
            "average row about 600 bytes, got {avg}"
        );
        let districts: i64 = conn
            .query_row("SELECT count(*) FROM district", [], |r| r.get(0))
            .unwrap();
        assert_eq!(districts, 10);
        assert!(size > 12_000 * 500, "file of {size} bytes too small");
        let plan: String = conn
            .query_row(
                "EXPLAIN QUERY PLAN SELECT * FROM customer ORDER BY c_zip",
                [],
                |r| r.get(3),
            )
            .unwrap();
        assert!(
            plan.contains("customer_zip"),
            "planner should scan the zip index: {plan}"
        );
    }

    #[test]
    fn refuses_to_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        std::fs::write(&path, b"x").unwrap();
        let err = generate(&path, &GenOptions { rows: 1, seed: 1 }, |_| {}).unwrap_err();
        assert!(err.to_string().contains("already exists"));
    }

    #[test]
    fn refuses_a_missing_directory_and_creates_none() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        let err = generate(
            &missing.join("c.db"),
            &GenOptions { rows: 1, seed: 1 },
            |_| {},
        )
        .unwrap_err();
        assert!(err.to_string().contains("is not a directory"), "{err}");
        assert!(!missing.exists());
    }
}
