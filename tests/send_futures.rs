//! `Memory`'s futures are `Send` when the host's store, model and clock are,
//! so a memory can live in a multi-threaded runtime (`tokio::spawn`, an axum
//! handler). The check is at compile time (`assert_send`) and at run time:
//! the calls run on another thread than the one that opened the memory.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use engram::testing::block_on;
use engram::Config;
use engram::Memory;
use engram::NewMessage;
use engram::OfflineModel;
use engram::Store;
use engram::StoreError;

/// A store that can cross threads (the test doubles are single-threaded).
#[derive(Clone, Default)]
struct SharedStore(Arc<Mutex<BTreeMap<String, Vec<u8>>>>);

impl Store for SharedStore {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.0.lock().unwrap().get(key).cloned())
    }
    async fn put(&self, key: &str, value: &[u8]) -> Result<(), StoreError> {
        self.0.lock().unwrap().insert(key.into(), value.into());
        Ok(())
    }
    async fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.0.lock().unwrap().remove(key);
        Ok(())
    }
    async fn list(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        let map = self.0.lock().unwrap();
        Ok(map
            .keys()
            .filter(|k| k.starts_with(prefix))
            .cloned()
            .collect())
    }
    async fn write_if(
        &self,
        guard: &str,
        expected: Option<&[u8]>,
        writes: &[(String, Option<Vec<u8>>)],
    ) -> Result<(), StoreError> {
        let mut map = self.0.lock().unwrap();
        if map.get(guard).map(Vec::as_slice) != expected {
            return Err(StoreError::Conflict);
        }
        for (k, v) in writes {
            match v {
                Some(v) => map.insert(k.clone(), v.clone()),
                None => map.remove(k),
            };
        }
        Ok(())
    }
}

fn assert_send<T: Send>(t: T) -> T {
    t
}

#[test]
fn memory_futures_are_send_with_send_host_parts() {
    let store = SharedStore::default();
    let clock = || 1_764_000_000_000i64;
    let mut memory = block_on(assert_send(Memory::open(
        "send",
        store.clone(),
        OfflineModel::new(),
        clock,
        Config::default(),
    )))
    .expect("open");
    // The memory and its calls move to another thread.
    let added = std::thread::spawn(move || {
        let added = block_on(assert_send(
            memory.add_message(NewMessage::user("Let's plan the Lisbon offsite.")),
        ))
        .expect("add");
        block_on(assert_send(
            memory.add_message(NewMessage::assistant("Gladly: when?")),
        ))
        .expect("reply");
        let view = block_on(assert_send(memory.view())).expect("view");
        let erased =
            block_on(assert_send(memory.erase(engram::Target::Message(1)))).expect("erase");
        assert_eq!(erased.messages, vec![1]);
        block_on(assert_send(memory.destroy())).expect("destroy");
        block_on(assert_send(memory.add_message(NewMessage::user("Again."))))
            .expect("a fresh start");
        (added.message, view.items.len())
    })
    .join()
    .expect("thread");
    assert_eq!(added, (1, 2));
    assert!(store
        .0
        .lock()
        .unwrap()
        .keys()
        .any(|k| k.starts_with("engram/send/")));
}
