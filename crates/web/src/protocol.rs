//! The protocol's messages as JS objects: [`to_js`] is the one place that turns a
//! [`Message`] into one and [`from_js`] the one that reads it back. The messages themselves are
//! `memviz_view::protocol`, re-exported here.

use js_sys::{ArrayBuffer, Object, Reflect};
use wasm_bindgen::{JsCast, JsValue};

pub use memviz_view::protocol::*;

/// The message as a JS object, to post.
pub fn to_js(message: Message<ArrayBuffer>) -> Object {
    let object = Object::new();
    for (key, value) in message.into_fields() {
        let value = match value {
            Value::Text(s) => JsValue::from_str(&s),
            Value::Number(n) => JsValue::from_f64(n),
            Value::Bytes(b) => b.into(),
        };
        let _ = Reflect::set(&object, &JsValue::from_str(key), &value);
    }
    object
}

/// Reads a message posted as a JS object.
pub fn from_js(value: &JsValue) -> Result<Message<ArrayBuffer>, ProtocolError> {
    if !value.is_object() {
        return Err(ProtocolError::NoKind);
    }
    Message::read(&JsFields(value))
}

/// The fields of a JS object.
struct JsFields<'a>(&'a JsValue);

impl JsFields<'_> {
    fn get(&self, key: &str) -> Option<JsValue> {
        Reflect::get(self.0, &JsValue::from_str(key)).ok()
    }
}

impl Fields for JsFields<'_> {
    type Bytes = ArrayBuffer;

    fn text(&self, key: &str) -> Option<String> {
        self.get(key)?.as_string()
    }

    fn number(&self, key: &str) -> Option<f64> {
        self.get(key)?.as_f64()
    }

    fn bytes(&self, key: &str) -> Option<ArrayBuffer> {
        self.get(key)?.dyn_into::<ArrayBuffer>().ok()
    }
}

#[cfg(all(test, target_arch = "wasm32"))]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test]
    fn messages_survive_the_trip_through_a_js_object() {
        use js_sys::Uint8Array;
        let buffer = |b: &[u8]| Uint8Array::from(b).buffer();
        let head = Message::Head { bytes: buffer(&[4, 5, 6]), group: 3, field: 9 };
        let back = from_js(&to_js(head)).expect("head");
        let Message::Head { bytes, group: 3, field: 9 } = back else { panic!("{back:?}") };
        assert_eq!(Uint8Array::new(&bytes).to_vec(), vec![4, 5, 6]);
        let progress = Message::Progress { read_bytes: 8 << 20, phase: Phase::HandingOver };
        assert_eq!(from_js(&to_js(progress.clone())), Ok(progress));
        assert_eq!(from_js(&JsValue::from_str("done")), Err(ProtocolError::NoKind));
        let odd = to_js(Message::Done);
        let _ = Reflect::set(&odd, &JsValue::from_str("kind"), &JsValue::from_str("dnoe"));
        assert_eq!(from_js(&odd), Err(ProtocolError::UnknownKind("dnoe".into())));
    }
}
