//! The host's JS clock, store and model as the engine's traits.

use crate::base::host::{Clock, Model, ModelError, Store, StoreError, TaskRequest, Write};
use crate::bindings::web::interop::{
    bytes_from_js, bytes_to_js, call, code_of, describe, from_js, kind_of, method, to_js, vector,
};
use js_sys::{Array, Function};
use wasm_bindgen::{JsCast, JsValue};

/// The host's clock object.
pub(super) struct JsClock(pub(super) JsValue);

impl Clock for JsClock {
    fn now_ms(&self) -> i64 {
        // `open` checked that `now()` returns a finite number; should it stop
        // doing so later, the JS engine's own clock stands in.
        method(&self.0, "now")
            .and_then(|f| f.call0(&self.0).ok())
            .and_then(|v| v.as_f64())
            .filter(|t| t.is_finite())
            .unwrap_or_else(js_sys::Date::now) as i64
    }
}

/// The host's store object.
pub(super) struct JsStore(pub(super) JsValue);

pub(super) fn store_failed(op: &str, e: JsValue) -> StoreError {
    if code_of(&e).as_deref() == Some("conflict") {
        return StoreError::Conflict;
    }
    StoreError::Failed(format!("store.{op}: {}", describe(&e)))
}

impl Store for JsStore {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let v = call(&self.0, "get", &[key.into()])
            .await
            .map_err(|e| store_failed("get", e))?;
        if v.is_null() || v.is_undefined() {
            return Ok(None);
        }
        bytes_from_js(&v).map(Some).ok_or_else(|| {
            StoreError::Failed(format!(
                "store.get({key:?}) returned a {}, not a Uint8Array (store values are bytes)",
                kind_of(&v)
            ))
        })
    }

    async fn get_many(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        // (js/src/memory.js gives every store a getMany: its own, or one
        // that reads the keys one by one.)
        let arg: Array = keys.iter().map(|k| JsValue::from_str(k)).collect();
        let v = call(&self.0, "getMany", &[arg.into()])
            .await
            .map_err(|e| store_failed("getMany", e))?;
        let bad = |what: String| {
            StoreError::Failed(format!(
                "store.getMany returned {what}: it returns an array with one Uint8Array or null per key"
            ))
        };
        let values: Array = v
            .dyn_into()
            .map_err(|v: JsValue| bad(format!("a {}", kind_of(&v))))?;
        if values.length() as usize != keys.len() {
            return Err(bad(format!(
                "{} values for {} keys",
                values.length(),
                keys.len()
            )));
        }
        values
            .iter()
            .map(|v| match v.is_null() || v.is_undefined() {
                true => Ok(None),
                false => bytes_from_js(&v)
                    .map(Some)
                    .ok_or_else(|| bad(format!("a {}", kind_of(&v)))),
            })
            .collect()
    }

    async fn put(&self, key: &str, value: &[u8]) -> Result<(), StoreError> {
        call(&self.0, "put", &[key.into(), bytes_to_js(value)])
            .await
            .map(drop)
            .map_err(|e| store_failed("put", e))
    }

    async fn delete(&self, key: &str) -> Result<(), StoreError> {
        call(&self.0, "delete", &[key.into()])
            .await
            .map(drop)
            .map_err(|e| store_failed("delete", e))
    }

    async fn list(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        let v = call(&self.0, "list", &[prefix.into()])
            .await
            .map_err(|e| store_failed("list", e))?;
        let mut keys: Vec<String> =
            from_js(v, "store.list result").map_err(|e| StoreError::Failed(e.to_string()))?;
        // The trait promises sorted keys; hosts' orders differ (UTF-16 in
        // JS, bytes in SQLite), so order them the engine's way here.
        crate::base::sort::sort(&mut keys);
        Ok(keys)
    }

    async fn write_if(
        &self,
        guard: &str,
        expected: Option<&[u8]>,
        writes: &[Write],
    ) -> Result<(), StoreError> {
        let batch: Array = writes
            .iter()
            .map(|(k, v)| {
                let value = v.as_deref().map_or(JsValue::NULL, bytes_to_js);
                Array::of2(&JsValue::from_str(k), &value)
            })
            .collect();
        let expected = expected.map_or(JsValue::NULL, bytes_to_js);
        let done = call(&self.0, "writeIf", &[guard.into(), expected, batch.into()])
            .await
            .map_err(|e| store_failed("writeIf", e))?;
        if done == JsValue::FALSE {
            Err(StoreError::Conflict)
        } else {
            Ok(())
        }
    }
}

/// The host's model object.
pub(super) struct JsModel {
    pub(super) model: JsValue,
    pub(super) count_tokens: Option<Function>,
}

/// The host's message is kept verbatim: it may be recorded (a failed note),
/// and every host must record the same text for the same failure.
pub(super) fn model_failed(e: JsValue) -> ModelError {
    let message = describe(&e);
    match code_of(&e).as_deref() {
        Some("bad-answer") => ModelError::BadAnswer(message),
        _ => ModelError::Unavailable(message),
    }
}

impl Model for JsModel {
    async fn complete(&self, request: &TaskRequest) -> Result<String, ModelError> {
        let req = to_js(request).map_err(|e| ModelError::BadAnswer(describe(&e)))?;
        let v = call(&self.model, "complete", &[req])
            .await
            .map_err(model_failed)?;
        v.as_string().ok_or_else(|| {
            ModelError::BadAnswer(format!(
                "model.complete returned a {}, not a string",
                v.js_typeof().as_string().unwrap_or_default()
            ))
        })
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ModelError> {
        let arg: Array = texts.iter().map(|t| JsValue::from_str(t)).collect();
        let v = call(&self.model, "embed", &[arg.into()])
            .await
            .map_err(model_failed)?;
        let bad = || ModelError::BadAnswer("model.embed must return an array of vectors".into());
        let rows: Array = v.dyn_into().map_err(|_| bad())?;
        rows.iter().map(|r| vector(&r).ok_or_else(bad)).collect()
    }

    fn count_tokens(&self, text: &str) -> usize {
        let counted = self.count_tokens.as_ref().and_then(|f| {
            f.call1(&self.model, &JsValue::from_str(text))
                .ok()
                .and_then(|n| n.as_f64())
                .filter(|n| n.is_finite() && *n >= 0.0)
        });
        match counted {
            Some(n) => n as usize,
            None => crate::base::text::estimate_tokens(text),
        }
    }
}
