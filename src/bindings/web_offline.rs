//! The built-in offline model as its own browser / Node / edge-worker
//! module (wasm-bindgen, feature `web-offline`): `offlineComplete`,
//! `offlineEmbed` and `offlineDimension`, nothing of the engine.
//!
//! The npm package ships it as a second `.wasm` (`pkg/offline/`), loaded
//! only when the offline model is used, so apps on a real LLM do not
//! download it (docs/DECISIONS.md, "The offline model is a separate module
//! in the npm package"). The engine reaches it as it reaches any JS model:
//! through `model.complete` and `model.embed`.

use js_sys::{Array, Float32Array, Reflect};
use wasm_bindgen::prelude::*;

use crate::base::host::{ModelError, TaskRequest};

/// A JS `Error` with a `code` property.
fn js_error(code: &str, message: &str) -> JsValue {
    let e = js_sys::Error::new(message);
    // Setting a property on a fresh Error object cannot fail.
    let _ = Reflect::set(&e, &JsValue::from_str("code"), &JsValue::from_str(code));
    e.into()
}

/// The built-in offline model's answer to one task request (the object the
/// engine passes to `model.complete`, or its JSON text): the answer's JSON
/// text. Throws an error with code `"bad-answer"` for a request it cannot
/// read (the engine counts it as a bad answer), `"model"` otherwise.
#[wasm_bindgen(js_name = offlineComplete)]
pub fn offline_complete(request: JsValue) -> Result<String, JsValue> {
    let text = match request.as_string() {
        Some(text) => text,
        None => js_sys::JSON::stringify(&request)
            .ok()
            .and_then(|s| s.as_string())
            .ok_or_else(|| {
                js_error(
                    "bad-answer",
                    "offline model: request: not representable as JSON",
                )
            })?,
    };
    let request: TaskRequest = crate::base::codec::from_json(&text)
        .map_err(|e| js_error("bad-answer", &format!("offline model: request: {e}")))?;
    crate::offline::complete(&request).map_err(|e| match e {
        ModelError::BadAnswer(_) => js_error("bad-answer", &e.to_string()),
        ModelError::Unavailable(_) => js_error("model", &e.to_string()),
    })
}

/// The built-in hashing embedder: one `Float32Array` of
/// [`crate::offline::embed::DIMENSION`] numbers per text.
#[wasm_bindgen(js_name = offlineEmbed)]
pub fn offline_embed(texts: Vec<String>) -> Array {
    crate::offline::embed(&texts)
        .iter()
        .map(|v| JsValue::from(Float32Array::from(v.as_slice())))
        .collect()
}

/// The dimension of the offline embedder's vectors.
#[wasm_bindgen(js_name = offlineDimension)]
pub fn offline_dimension() -> usize {
    crate::offline::embed::DIMENSION
}
