//! Every conversion between JS and Rust values, and calls into JS objects.

use js_sys::{Array, ArrayBuffer, Float32Array, Function, Promise, Reflect, Uint8Array};
use serde::de::DeserializeOwned;
use serde::Serialize;
use wasm_bindgen::{JsCast, JsValue};

use crate::base::error::Error;
use wasm_bindgen_futures::JsFuture;

/// A Rust value as a plain JS value (through JSON text: serde_json is in the
/// module anyway for persistence, so this adds no second set of serde code).
pub(super) fn to_js<T: Serialize + ?Sized>(value: &T) -> Result<JsValue, JsValue> {
    parse_js(serde_json::to_string(value))
}

/// The part of [`to_js`] that is the same for every type (compiled once).
fn parse_js(text: serde_json::Result<String>) -> Result<JsValue, JsValue> {
    let text =
        text.map_err(|e| js_error("internal", &format!("cannot convert a result to JS: {e}")))?;
    js_sys::JSON::parse(&text)
}

/// A JS value as a Rust value; `what` names the argument in the error.
pub(super) fn from_js<T: DeserializeOwned>(value: JsValue, what: &str) -> Result<T, Error> {
    let bytes = js_bytes(&value, what)?;
    crate::base::codec::from_bytes(&bytes).map_err(|e| refused(what, e))
}

/// A JS value in the value encoding (the part of [`from_js`] that is the
/// same for every type, compiled once).
fn js_bytes(value: &JsValue, what: &str) -> Result<Vec<u8>, Error> {
    let text = js_sys::JSON::stringify(value)
        .ok()
        .and_then(|s| s.as_string())
        .ok_or_else(|| Error::invalid(format!("{what}: not representable as JSON")))?;
    crate::base::codec::json_to_bytes(&text).map_err(|e| refused(what, e))
}

/// A JS argument that does not read as its type.
fn refused(what: &str, e: crate::base::codec::wire::CodecError) -> Error {
    Error::invalid(format!("{what}: {e}"))
}

/// A JS `Error` with a `code` property.
pub(super) fn js_error(code: &str, message: &str) -> JsValue {
    let e = js_sys::Error::new(message);
    // Setting a property on a fresh Error object cannot fail.
    let _ = Reflect::set(&e, &JsValue::from_str("code"), &JsValue::from_str(code));
    e.into()
}

/// An engine error as a JS error (`code` from [`Error::code`]).
pub(super) fn engine_error(e: Error) -> JsValue {
    js_error(e.code(), &e.to_string())
}

/// The message of whatever a JS host threw or rejected with.
pub(super) fn describe(v: &JsValue) -> String {
    if let Some(e) = v.dyn_ref::<js_sys::Error>() {
        return String::from(e.message());
    }
    if let Some(s) = v.as_string() {
        return s;
    }
    js_sys::JSON::stringify(v)
        .ok()
        .and_then(|s| s.as_string())
        .unwrap_or_else(|| "unknown error".into())
}

/// The `code` property of a thrown value, if it has a string one.
pub(super) fn code_of(v: &JsValue) -> Option<String> {
    if !v.is_object() {
        return None;
    }
    Reflect::get(v, &JsValue::from_str("code"))
        .ok()
        .and_then(|c| c.as_string())
}

/// `obj[name]` if it is a function.
pub(super) fn method(obj: &JsValue, name: &str) -> Option<Function> {
    Reflect::get(obj, &JsValue::from_str(name))
        .ok()
        .and_then(|f| f.dyn_into::<Function>().ok())
}

/// Calls `obj[name](...args)` and awaits the result when it is a promise
/// (or any thenable). Exceptions and rejections come back as `Err`.
pub(super) async fn call(obj: &JsValue, name: &str, args: &[JsValue]) -> Result<JsValue, JsValue> {
    let f = method(obj, name)
        .ok_or_else(|| js_error("invalid-input", &format!("host object has no {name}()")))?;
    let args: Array = args.iter().collect();
    let value = f.apply(obj, &args)?;
    let thenable = value.is_object() && method(&value, "then").is_some();
    if thenable {
        JsFuture::from(Promise::resolve(&value)).await
    } else {
        Ok(value)
    }
}

/// One vector from a JS array or typed array of numbers.
pub(super) fn vector(v: &JsValue) -> Option<Vec<f32>> {
    if !(Array::is_array(v)
        || v.is_instance_of::<Float32Array>()
        || js_sys::ArrayBuffer::is_view(v))
    {
        return None;
    }
    // `new Float32Array(x)` converts each number like Rust's `as f32`
    // (round to nearest, ties to even); non-numbers become NaN, which the
    // engine rejects as a bad answer.
    Some(Float32Array::new(v).to_vec())
}

/// A store value as JS: a fresh `Uint8Array` (a copy, not a view of the
/// module's memory, so the store may keep it).
pub(super) fn bytes_to_js(value: &[u8]) -> JsValue {
    Uint8Array::from(value).into()
}

/// A store value from JS: a `Uint8Array` (a Node `Buffer` is one) or an
/// `ArrayBuffer`; `None` for anything else.
pub(super) fn bytes_from_js(v: &JsValue) -> Option<Vec<u8>> {
    if v.is_instance_of::<Uint8Array>() {
        Some(v.unchecked_ref::<Uint8Array>().to_vec())
    } else if v.is_instance_of::<ArrayBuffer>() {
        Some(Uint8Array::new(v).to_vec())
    } else {
        None
    }
}

/// What a JS value is, for error messages: `typeof`, or the constructor's
/// name for objects (`string`, `Array`, `Uint16Array`...).
pub(super) fn kind_of(v: &JsValue) -> String {
    let t = v.js_typeof().as_string().unwrap_or_default();
    if t != "object" {
        return t;
    }
    Reflect::get(v, &JsValue::from_str("constructor"))
        .ok()
        .and_then(|c| Reflect::get(&c, &JsValue::from_str("name")).ok())
        .and_then(|n| n.as_string())
        .filter(|n| !n.is_empty())
        .unwrap_or(t)
}
