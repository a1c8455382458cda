//! [`SqliteStore`]: a persistent [`HostStore`] in one SQLite file.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::types::ValueRef;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use crate::{HostStore, StoreError};

/// A store in one SQLite file (rusqlite, SQLite compiled in: nothing to
/// install). One table `engram_kv(key TEXT PRIMARY KEY, value BLOB)`, the
/// same as the Python host's `SQLiteStore`, so either host opens a file the
/// other wrote; many memories (namespaces) can share a file. `write_if`
/// checks the guard and applies every write in one `BEGIN IMMEDIATE`
/// transaction, so it is atomic and safe against other connections and
/// processes writing the same file (they wait for each other up to the
/// busy timeout, 30 s). The file is in WAL mode.
///
/// ```no_run
/// use engram_wasmtime_host::{Host, SqliteStore};
/// let store = SqliteStore::open("memory.db")?;
/// let host = Host::with_choice(1_772_445_600_000, store, engram_wasmtime_host::ModelChoice::Offline);
/// # Ok::<(), rusqlite::Error>(())
/// ```
pub struct SqliteStore {
    db: Mutex<Connection>,
    path: PathBuf,
}

impl SqliteStore {
    /// Opens (or creates) the SQLite file at `path`.
    pub fn open(path: impl AsRef<Path>) -> rusqlite::Result<Self> {
        let path = path.as_ref().to_path_buf();
        let db = Connection::open(&path)?;
        db.busy_timeout(Duration::from_secs(30))?;
        // `journal_mode` answers with the mode now: read it as a row.
        let _mode: String = db.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        db.execute_batch(
            "CREATE TABLE IF NOT EXISTS engram_kv \
             (key TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID",
        )?;
        Ok(SqliteStore {
            db: Mutex::new(db),
            path,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn db(&self) -> MutexGuard<'_, Connection> {
        // A panic while the lock was held left no transaction open: an
        // uncommitted one rolls back when dropped.
        self.db.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn failed(op: &str, e: rusqlite::Error) -> StoreError {
    StoreError::Failed(format!("sqlite {op}: {e}"))
}

/// A stored value: a BLOB, or text from a file written before values were
/// bytes (its UTF-8 bytes).
fn value(row: &rusqlite::Row<'_>) -> rusqlite::Result<Vec<u8>> {
    match row.get_ref(0)? {
        ValueRef::Blob(b) | ValueRef::Text(b) => Ok(b.to_vec()),
        other => Err(rusqlite::Error::InvalidColumnType(
            0,
            "value".into(),
            other.data_type(),
        )),
    }
}

const GET: &str = "SELECT value FROM engram_kv WHERE key = ?1";
const PUT: &str = "INSERT OR REPLACE INTO engram_kv (key, value) VALUES (?1, ?2)";
const DELETE: &str = "DELETE FROM engram_kv WHERE key = ?1";

impl HostStore for SqliteStore {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.db()
            .query_row(GET, [key], value)
            .optional()
            .map_err(|e| failed("get", e))
    }

    fn put(&self, key: &str, value: &[u8]) -> Result<(), StoreError> {
        self.db()
            .execute(PUT, params![key, value])
            .map(drop)
            .map_err(|e| failed("put", e))
    }

    fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.db()
            .execute(DELETE, [key])
            .map(drop)
            .map_err(|e| failed("delete", e))
    }

    fn list_prefix(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        // Keys compare as UTF-8 bytes (BINARY collation): scan from the
        // prefix and stop at the first key without it.
        let db = self.db();
        let run = || -> rusqlite::Result<Vec<String>> {
            let mut stmt =
                db.prepare_cached("SELECT key FROM engram_kv WHERE key >= ?1 ORDER BY key")?;
            let mut rows = stmt.query([prefix])?;
            let mut keys = Vec::new();
            while let Some(row) = rows.next()? {
                let key: String = row.get(0)?;
                if !key.starts_with(prefix) {
                    break;
                }
                keys.push(key);
            }
            Ok(keys)
        };
        run().map_err(|e| failed("list-prefix", e))
    }

    fn write_if(
        &self,
        guard: &str,
        expected: Option<&[u8]>,
        writes: &[(String, Option<Vec<u8>>)],
    ) -> Result<(), StoreError> {
        let mut db = self.db();
        let mut run = || -> rusqlite::Result<bool> {
            let tx = db.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let now = tx.query_row(GET, [guard], value).optional()?;
            if now.as_deref() != expected {
                return Ok(false); // dropping `tx` rolls it back
            }
            for (key, v) in writes {
                match v {
                    Some(v) => tx.execute(PUT, params![key, v])?,
                    None => tx.execute(DELETE, [key])?,
                };
            }
            tx.commit()?;
            Ok(true)
        };
        match run() {
            Ok(true) => Ok(()),
            Ok(false) => Err(StoreError::Conflict),
            Err(e) => Err(failed("write-if", e)),
        }
    }
}
