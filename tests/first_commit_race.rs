//! Two hosts creating one memory at once: a handle that reads "no head"
//! just before another host's first commit lands, and then finds that
//! commit's log, opens the new memory instead of calling it corrupt (seen
//! with six processes opening one new memory in PostgreSQL).

use std::cell::RefCell;
use std::collections::BTreeMap;

use engram::base::host::{Store, StoreError, Write};
use engram::testing::{block_on, ManualClock, MemoryStore, ScriptedModel};
use engram::Config;
use engram::Memory;
use engram::NewMessage;

const T0: i64 = 1_764_000_000_000;

/// A store whose first read of the head answers "absent" and then lets
/// another host's first commit (`pending`) land before the next read.
struct RacingStore {
    inner: MemoryStore,
    head: String,
    pending: RefCell<Option<BTreeMap<String, Vec<u8>>>>,
}

impl Store for RacingStore {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let got = self.inner.get(key).await?;
        if key == self.head {
            let pending = self.pending.borrow_mut().take();
            if let Some(commit) = pending {
                for (k, v) in commit {
                    self.inner.put(&k, &v).await?;
                }
            }
        }
        Ok(got)
    }
    async fn put(&self, key: &str, value: &[u8]) -> Result<(), StoreError> {
        self.inner.put(key, value).await
    }
    async fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.inner.delete(key).await
    }
    async fn list(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        self.inner.list(prefix).await
    }
    async fn write_if(
        &self,
        guard: &str,
        expected: Option<&[u8]>,
        writes: &[Write],
    ) -> Result<(), StoreError> {
        self.inner.write_if(guard, expected, writes).await
    }
}

#[test]
fn opening_while_another_host_makes_the_first_commit_reads_the_new_memory() {
    block_on(async {
        let clock = ManualClock::at(T0);
        // The other host's first commit, made on a store of its own.
        let other = MemoryStore::new();
        let mut first = Memory::open(
            "u",
            other.clone(),
            ScriptedModel::new(),
            clock.clone(),
            Config::default(),
        )
        .await
        .unwrap();
        first
            .add_message(NewMessage::user("The first message of a new memory."))
            .await
            .unwrap();
        let commit = other.dump();
        let head = commit
            .keys()
            .find(|k| k.ends_with("/head"))
            .cloned()
            .expect("a head key");

        let racing = RacingStore {
            inner: MemoryStore::new(),
            head,
            pending: RefCell::new(Some(commit)),
        };
        let mut second = Memory::open(
            "u",
            racing,
            ScriptedModel::new(),
            clock.clone(),
            Config::default(),
        )
        .await
        .expect("the memory another host just created opens");
        assert_eq!(second.messages().await.unwrap().len(), 1);
        second
            .add_message(NewMessage::user(
                "A second message, after the first host's.",
            ))
            .await
            .unwrap();
        assert_eq!(second.messages().await.unwrap().len(), 2);
    });
}
