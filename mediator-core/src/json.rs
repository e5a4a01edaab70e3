//! Reading JSON without losing anything: every number stays as written, and a key that appears
//! twice in one object is an error rather than a value silently dropped.
//!
//! Numbers: serde_json's `arbitrary_precision` (set for the whole workspace) keeps a number's
//! text, so `18446744073709551616` and `3.14159265358979323846` leave as they came. Duplicate
//! keys: serde_json keeps the last value of a repeated key; [`from_str`] and the
//! [`deserialize_value`] family refuse them instead, with the line and column of the repeated
//! key when reading text. JSON (RFC 8259) leaves duplicates' meaning to each reader, so a
//! mediator that kept one of two values would be guessing what its source meant.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::map::Entry;
use serde_json::value::RawValue;
use serde_json::{Map, Number, Value};

/// The key serde_json (with `arbitrary_precision`) hands a number's text under, as a one-entry
/// map, when a visitor asks for any value. A test below fails if serde_json ever changes it.
pub const NUMBER_TOKEN: &str = "$serde_json::private::Number";

/// A JSON value held as its compact text: how a tool keeps what the mediator mostly passes
/// through (schemas, annotations, `_meta`, fields it does not know).
///
/// Kept as text, a value takes about its own size (a [`Value`] tree takes seven to twelve times
/// as much) and is written out without being rebuilt; [`Json::to_value`] parses it when
/// something needs to read or change it. Reading one keeps every number as written and refuses
/// a key written twice. The text is what serde_json writes for the value, compact, whatever
/// spacing it came with.
#[derive(Clone)]
pub struct Json(Box<RawValue>);

/// Equal as JSON values are: the same members in another order make the same value. Equal
/// texts answer at once; only different ones are parsed.
impl PartialEq for Json {
    fn eq(&self, other: &Json) -> bool {
        // Equal values have texts of one length (the same members, maybe in another order).
        let (this, that) = (self.as_str(), other.as_str());
        this == that || (this.len() == that.len() && self.to_value() == other.to_value())
    }
}

impl Eq for Json {}

impl Json {
    pub fn from_value(value: &Value) -> Json {
        Json(serde_json::value::to_raw_value(value).expect("a JSON value serializes"))
    }

    /// JSON text as it is, checked to be JSON (and so meant for text this crate wrote compact).
    pub fn from_text(text: String) -> Result<Json, serde_json::Error> {
        RawValue::from_string(text).map(Json)
    }

    pub fn null() -> Json {
        Json(RawValue::NULL.to_owned())
    }

    /// The value as a tree, to read or change.
    pub fn to_value(&self) -> Value {
        // Text read here is at most 128 levels deep (serde_json's limit on reading), but a value
        // built in code may be deeper; what was written can be read back.
        let mut deserializer = serde_json::Deserializer::from_str(self.0.get());
        deserializer.disable_recursion_limit();
        Value::deserialize(&mut deserializer).expect("the text is JSON it was made from")
    }

    /// The compact JSON text.
    pub fn as_str(&self) -> &str {
        self.0.get()
    }
}

impl From<Value> for Json {
    fn from(value: Value) -> Json {
        Json::from_value(&value)
    }
}

impl fmt::Debug for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Json {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserialize_compact(deserializer).map(Json)
    }
}

/// serde_json's message without the " at line L column C" it appends, for a caller that gives
/// the place itself (a line and column in a larger text, a JSON pointer).
pub fn message(error: &serde_json::Error) -> String {
    let message = error.to_string();
    let position = format!(" at line {} column {}", error.line(), error.column());
    match message.strip_suffix(&position) {
        Some(stripped) => stripped.to_owned(),
        None => message,
    }
}

/// The member names of the object under `properties` in the object `text`, in order; none when
/// either is not an object. Nothing else is built.
pub fn property_names(text: &str) -> Vec<String> {
    struct Root;
    struct Names;

    impl<'de> Visitor<'de> for Root {
        type Value = Vec<String>;

        fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
            formatter.write_str("an object")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<Vec<String>, A::Error> {
            let mut names = Vec::new();
            while let Some(key) = entries.next_key::<Cow<'de, str>>()? {
                if key == "properties" {
                    names = entries.next_value_seed(Names)?;
                } else {
                    entries.next_value::<de::IgnoredAny>()?;
                }
            }
            Ok(names)
        }
    }

    impl<'de> DeserializeSeed<'de> for Names {
        type Value = Vec<String>;

        fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Vec<String>, D::Error> {
            deserializer.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for Names {
        type Value = Vec<String>;

        fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
            formatter.write_str("anything")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<Vec<String>, A::Error> {
            let mut names = Vec::new();
            while let Some(name) = entries.next_key::<String>()? {
                entries.next_value::<de::IgnoredAny>()?;
                if names.is_empty() && name == NUMBER_TOKEN {
                    // A number (see `ExactValue`), not an object.
                    return Ok(Vec::new());
                }
                names.push(name);
            }
            Ok(names)
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Vec<String>, A::Error> {
            while items.next_element::<de::IgnoredAny>()?.is_some() {}
            Ok(Vec::new())
        }

        fn visit_bool<E>(self, _: bool) -> Result<Vec<String>, E> {
            Ok(Vec::new())
        }

        fn visit_i64<E>(self, _: i64) -> Result<Vec<String>, E> {
            Ok(Vec::new())
        }

        fn visit_u64<E>(self, _: u64) -> Result<Vec<String>, E> {
            Ok(Vec::new())
        }

        fn visit_f64<E>(self, _: f64) -> Result<Vec<String>, E> {
            Ok(Vec::new())
        }

        fn visit_str<E>(self, _: &str) -> Result<Vec<String>, E> {
            Ok(Vec::new())
        }

        fn visit_unit<E>(self) -> Result<Vec<String>, E> {
            Ok(Vec::new())
        }
    }

    if !text.starts_with('{') {
        return Vec::new();
    }
    let mut deserializer = serde_json::Deserializer::from_str(text);
    deserializer.disable_recursion_limit();
    serde::Deserializer::deserialize_map(&mut deserializer, Root).unwrap_or_default()
}

/// Renames a member of `object` in place, keeping its position.
pub fn rename_key(object: &mut Map<String, Value>, from: &str, to: &str) {
    if object.contains_key(from) {
        *object = std::mem::take(object)
            .into_iter()
            .map(|(key, value)| if key == from { (to.to_owned(), value) } else { (key, value) })
            .collect();
    }
}

/// The text after a leading byte order mark, and whether there was one. Some editors on
/// Windows write one; RFC 8259 lets a reader ignore it, and the clients do.
pub fn without_bom(text: &str) -> (&str, bool) {
    match text.strip_prefix('\u{FEFF}') {
        Some(body) => (body, true),
        None => (text, false),
    }
}

/// Parses JSON text into a value, refusing duplicate keys; errors carry line and column. A
/// leading byte order mark is read past (and takes no column, as in an editor).
pub fn from_str(text: &str) -> Result<Value, serde_json::Error> {
    let text = without_bom(text).0;
    let mut deserializer = serde_json::Deserializer::from_str(text);
    // Tool lists nest deeply only when hostile; serde_json's recursion limit (128) stays on.
    let value = deserialize_value(&mut deserializer)?;
    deserializer.end()?;
    Ok(value)
}

/// Parses JSON text into `T`, refusing duplicate keys; every error carries line and column.
/// The text is read twice (once for keys, once for `T`): meant for small files such as
/// settings and dictionaries.
pub fn from_str_as<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, serde_json::Error> {
    from_str(text)?;
    serde_json::from_str(without_bom(text).0)
}

/// The members of a JSON object, in order, their values as raw text: for reading a large
/// envelope (a `tools/list` page) one member at a time. A repeated member name is refused.
pub fn object_members(text: &str) -> Result<Vec<(String, &RawValue)>, serde_json::Error> {
    struct Members;

    impl<'de> Visitor<'de> for Members {
        type Value = Vec<(String, &'de RawValue)>;

        fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
            formatter.write_str("a JSON object")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<Self::Value, A::Error> {
            let mut members: Vec<(String, &'de RawValue)> = Vec::new();
            let mut seen = std::collections::HashSet::new();
            while let Some(key) = entries.next_key::<String>()? {
                if !seen.insert(key.clone()) {
                    return Err(de::Error::custom(format_args!("duplicate key `{key}` in one object")));
                }
                members.push((key, entries.next_value()?));
            }
            Ok(members)
        }
    }

    let mut deserializer = serde_json::Deserializer::from_str(text);
    let members = deserializer.deserialize_map(Members)?;
    deserializer.end()?;
    Ok(members)
}

/// Any JSON value, refusing duplicate keys at every depth.
pub fn deserialize_value<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Value, D::Error> {
    deserializer.deserialize_any(ExactValue)
}

/// Any JSON value as compact text, refusing duplicate keys at every depth: the form a tool list
/// keeps what it mostly passes through (schemas), at about the size of the text, where a
/// [`Value`] tree takes seven to twelve times as much. Written as serde_json writes compact
/// JSON, so the text is the same whether it came from pretty or compact input.
pub fn deserialize_compact<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Box<RawValue>, D::Error> {
    let mut text = Vec::new();
    Compact { out: &mut text }.deserialize(deserializer)?;
    // Written from `str`s and ASCII, and read as JSON on the way: it is both, so it is copied
    // into a raw value rather than read again.
    let text = std::str::from_utf8(&text).map_err(de::Error::custom)?;
    Ok(verbatim(text))
}

/// serde_json's name for a raw value when it serializes one: it writes the text as it is. A test
/// below fails if serde_json ever changes it.
const RAW_TOKEN: &str = "$serde_json::private::RawValue";

/// `text`, known to be JSON, as a raw value, without reading it again (one copy).
fn verbatim(text: &str) -> Box<RawValue> {
    struct Verbatim<'a>(&'a str);

    impl Serialize for Verbatim<'_> {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeStruct as _;

            let mut raw = serializer.serialize_struct(RAW_TOKEN, 1)?;
            raw.serialize_field(RAW_TOKEN, self.0)?;
            raw.end()
        }
    }

    serde_json::value::to_raw_value(&Verbatim(text)).expect("writing to memory does not fail")
}

/// Writes the value it reads as compact JSON text into `out`.
struct Compact<'a> {
    out: &'a mut Vec<u8>,
}

impl Compact<'_> {
    fn string(&mut self, text: &str) {
        serde_json::to_writer(&mut *self.out, text).expect("writing to memory does not fail");
    }

    /// A string lent by the reader: read straight from JSON text it has nothing to escape, and
    /// is copied as it is (lent by a `Value` it may have; it is then escaped).
    fn plain_string(&mut self, text: &str) {
        if text.bytes().any(|byte| byte < 0x20 || byte == b'"' || byte == b'\\') {
            return self.string(text);
        }
        self.out.push(b'"');
        self.out.extend_from_slice(text.as_bytes());
        self.out.push(b'"');
    }

    fn display(&mut self, value: impl fmt::Display) {
        use std::io::Write as _;
        write!(self.out, "{value}").expect("writing to memory does not fail");
    }
}

impl<'de> DeserializeSeed<'de> for Compact<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Compact<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<(), E> {
        self.out.extend_from_slice(if value { b"true" } else { b"false" });
        Ok(())
    }

    fn visit_i64<E>(mut self, value: i64) -> Result<(), E> {
        self.display(value);
        Ok(())
    }

    fn visit_u64<E>(mut self, value: u64) -> Result<(), E> {
        self.display(value);
        Ok(())
    }

    fn visit_i128<E>(mut self, value: i128) -> Result<(), E> {
        self.display(value);
        Ok(())
    }

    fn visit_u128<E>(mut self, value: u128) -> Result<(), E> {
        self.display(value);
        Ok(())
    }

    fn visit_f64<E>(self, value: f64) -> Result<(), E> {
        let number = Number::from_f64(value).map_or(Value::Null, Value::Number);
        self.out.extend_from_slice(number.to_string().as_bytes());
        Ok(())
    }

    fn visit_str<E>(mut self, value: &str) -> Result<(), E> {
        self.string(value);
        Ok(())
    }

    fn visit_borrowed_str<E>(mut self, value: &'de str) -> Result<(), E> {
        self.plain_string(value);
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }

    fn visit_none<E>(self) -> Result<(), E> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<(), A::Error> {
        self.out.push(b'[');
        let mut first = true;
        loop {
            let mark = self.out.len();
            if !first {
                self.out.push(b',');
            }
            if items.next_element_seed(Compact { out: &mut *self.out })?.is_none() {
                self.out.truncate(mark);
                break;
            }
            first = false;
        }
        self.out.push(b']');
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut entries: A) -> Result<(), A::Error> {
        // A short object is checked for repeated keys by looking along it, a long one through a
        // hash set.
        let mut keys: Vec<Cow<'de, str>> = Vec::new();
        let mut many: Option<std::collections::HashSet<Cow<'de, str>>> = None;
        let mut members = 0usize;
        while let Some(key) = entries.next_key::<Cow<'de, str>>()? {
            if members == 0 && key == NUMBER_TOKEN {
                // A number, its text as written (see `ExactValue`).
                let text: Cow<'de, str> = entries.next_value()?;
                let number = serde_json::from_str::<Number>(&text).map_err(de::Error::custom)?;
                self.display(number);
                return Ok(());
            }
            let repeated = match &many {
                Some(seen) => seen.contains(&key),
                None => keys.contains(&key),
            };
            if repeated {
                return Err(de::Error::custom(format_args!("duplicate key `{key}` in one object")));
            }
            self.out.push(if members == 0 { b'{' } else { b',' });
            members += 1;
            match &key {
                Cow::Borrowed(plain) => self.plain_string(plain),
                Cow::Owned(escaped) => self.string(escaped),
            }
            self.out.push(b':');
            if let Some(seen) = &mut many {
                seen.insert(key);
            } else if keys.len() == 16 {
                let mut seen: std::collections::HashSet<_> = keys.drain(..).collect();
                seen.insert(key);
                many = Some(seen);
            } else {
                keys.push(key);
            }
            entries.next_value_seed(Compact { out: &mut *self.out })?;
        }
        if members == 0 {
            self.out.push(b'{');
        }
        self.out.push(b'}');
        Ok(())
    }
}

/// A seed for any JSON value, refusing duplicate keys at every depth.
pub struct ExactValue;

impl<'de> DeserializeSeed<'de> for ExactValue {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ExactValue {
    type Value = Value;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_i128<E: de::Error>(self, value: i128) -> Result<Value, E> {
        Number::from_i128(value).map(Value::Number).ok_or_else(|| E::custom("number out of range"))
    }

    fn visit_u128<E: de::Error>(self, value: u128) -> Result<Value, E> {
        Number::from_u128(value).map(Value::Number).ok_or_else(|| E::custom("number out of range"))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        Ok(Number::from_f64(value).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Value, A::Error> {
        let mut array = Vec::with_capacity(items.size_hint().unwrap_or(0));
        while let Some(item) = items.next_element_seed(ExactValue)? {
            array.push(item);
        }
        Ok(Value::Array(array))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = entries.next_key::<Cow<'de, str>>()? {
            if object.is_empty() && key == NUMBER_TOKEN {
                // A number that fits no machine type, its text as written.
                let text: Cow<'de, str> = entries.next_value()?;
                return serde_json::from_str::<Number>(&text).map(Value::Number).map_err(de::Error::custom);
            }
            match object.entry(key.into_owned()) {
                Entry::Occupied(slot) => {
                    return Err(de::Error::custom(format_args!("duplicate key `{}` in one object", slot.key())));
                }
                Entry::Vacant(slot) => {
                    slot.insert(entries.next_value_seed(ExactValue)?);
                }
            }
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn numbers_leave_with_every_digit() {
        // serde_json spells an exponent `e+N` or `e-N`; the digits are kept as written.
        for (text, written) in [
            ("18446744073709551616", "18446744073709551616"),
            ("-18446744073709551617", "-18446744073709551617"),
            ("3.14159265358979323846", "3.14159265358979323846"),
            ("1e400", "1e+400"),
            ("1E+2", "1e+2"),
            ("2.50E-7", "2.50e-7"),
            ("-0", "-0"),
            ("-0.0", "-0.0"),
            ("0.1", "0.1"),
            ("5", "5"),
            ("-5", "-5"),
            ("1.0", "1.0"),
            ("123456789012345678901234567890.123456789e-7", "123456789012345678901234567890.123456789e-7"),
        ] {
            let value = from_str(text).unwrap();
            assert!(value.is_number(), "{text}");
            assert_eq!(serde_json::to_string(&value).unwrap(), written);
            let nested = from_str(&format!(r#"{{"a":[{text}],"b":{{"c":{text}}}}}"#)).unwrap();
            assert_eq!(nested.to_string(), format!(r#"{{"a":[{written}],"b":{{"c":{written}}}}}"#));
        }
    }

    #[test]
    fn duplicate_keys_are_refused_with_their_place() {
        let error = from_str("{\n  \"a\": 1,\n  \"a\": 2\n}").unwrap_err();
        assert!(error.to_string().contains("duplicate key `a`"), "{error}");
        assert_eq!(error.line(), 3);
        let error = from_str(r#"{"tools": [{"name": "x", "inputSchema": {"type": "object", "type": "string"}}]}"#);
        assert!(error.unwrap_err().to_string().contains("duplicate key `type`"));
        // The same key in different objects is not a duplicate.
        assert!(from_str(r#"{"a": {"a": 1}, "b": [{"a": 1}, {"a": 2}]}"#).is_ok());
        // Escapes spell the same key.
        assert!(from_str(r#"{"a": 1, "\u0061": 2}"#).is_err());
    }

    #[test]
    fn agrees_with_serde_json_where_serde_json_loses_nothing() {
        let text = r#"{"s":"x\n\"y","t":true,"n":null,"a":[1,-2,2.5,{}],"o":{"k":[]}}"#;
        assert_eq!(from_str(text).unwrap(), serde_json::from_str::<Value>(text).unwrap());
        assert!(from_str("[1,").is_err());
        assert!(from_str("{} x").is_err());
    }

    use crate::testing::json_value;

    #[test]
    fn json_is_held_as_compact_text_and_compared_as_json() {
        let schema: Json =
            serde_json::from_str("{\n  \"type\": \"object\",\n  \"maximum\": 18446744073709551616\n}").unwrap();
        assert_eq!(schema.as_str(), r#"{"type":"object","maximum":18446744073709551616}"#);
        assert_eq!(serde_json::to_string(&schema).unwrap(), schema.as_str());
        assert_eq!(schema.to_value()["maximum"].to_string(), "18446744073709551616");
        let reordered = Json::from(serde_json::json!({"maximum": 18446744073709551616u128, "type": "object"}));
        assert_eq!(schema, reordered);
        assert_ne!(schema, Json::from(serde_json::json!({"type": "object"})));
        assert!(serde_json::from_str::<Json>(r#"{"type": "object", "type": "string"}"#).is_err());
    }

    fn compact(text: &str) -> Result<String, serde_json::Error> {
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let raw = deserialize_compact(&mut deserializer)?;
        deserializer.end()?;
        Ok(raw.get().to_owned())
    }

    #[test]
    fn property_names_are_read_in_order_without_a_tree() {
        let text = r#"{"type":"object","properties":{"b":{"type":"string"},"a":{"properties":{"x":1}},"1.5e3":2.50}}"#;
        assert_eq!(property_names(text), ["b", "a", "1.5e3"]);
        assert!(property_names(r#"{"properties":"nope"}"#).is_empty());
        assert!(property_names(r#"{"properties":[{"a":1}]}"#).is_empty());
        assert!(property_names(r#"{"properties":12345678901234567890123}"#).is_empty());
        assert!(property_names("[1]").is_empty());
        assert!(property_names(r#"{"type":"object"}"#).is_empty());
    }

    #[test]
    fn a_value_deeper_than_text_may_be_is_read_back() {
        let mut deep = Value::Null;
        for _ in 0..500 {
            deep = Value::Array(vec![deep]);
        }
        assert_eq!(Json::from_value(&deep).to_value(), deep);
    }

    #[test]
    fn a_raw_value_is_made_from_text_as_serde_json_names_it() {
        let raw = verbatim(r#"{"a":[1,"x"]}"#);
        assert_eq!(raw.get(), r#"{"a":[1,"x"]}"#, "serde_json's raw value token changed");
        assert_eq!(serde_json::to_string(&raw).unwrap(), r#"{"a":[1,"x"]}"#);
    }

    #[test]
    fn compact_text_refuses_what_a_value_refuses() {
        let error = compact("{\n  \"a\": 1,\n  \"a\": 2\n}").unwrap_err();
        assert!(error.to_string().contains("duplicate key `a`"), "{error}");
        assert_eq!(error.line(), 3);
        // Past sixteen members the keys are looked up in a set; a repeat is still found.
        let members: Vec<String> = (0..40).map(|n| format!("\"k{n}\": {n}")).collect();
        let long = format!("{{{}, \"k3\": 0}}", members.join(", "));
        assert!(compact(&long).unwrap_err().to_string().contains("duplicate key `k3`"));
        assert!(compact(&format!("{{{}}}", members.join(", "))).is_ok());
        assert!(compact(r#"{"a": 1, "\u0061": 2}"#).is_err());
        assert!(compact("[1,").is_err());
        assert_eq!(compact("{ }").unwrap(), "{}");
        assert_eq!(compact(" [ ] ").unwrap(), "[]");
        assert_eq!(compact(r#"{"s": "\u00e9\n", "n": 1E400}"#).unwrap(), r#"{"s":"é\n","n":1e+400}"#);
    }
    proptest! {
        #[test]
        fn compact_text_is_what_serde_json_writes(value in json_value()) {
            let text = value.to_string();
            prop_assert_eq!(&compact(&text).unwrap(), &text);
            let pretty = serde_json::to_string_pretty(&value).unwrap();
            prop_assert_eq!(&compact(&pretty).unwrap(), &text);
            let raw = deserialize_compact(&value).unwrap();
            prop_assert_eq!(raw.get(), &text);
        }

        #[test]
        fn text_survives_a_round_trip(value in json_value()) {
            let text = value.to_string();
            let read = from_str(&text).unwrap();
            prop_assert_eq!(read.to_string(), text);
            let pretty = serde_json::to_string_pretty(&value).unwrap();
            prop_assert_eq!(serde_json::to_string_pretty(&from_str(&pretty).unwrap()).unwrap(), pretty);
        }

        #[test]
        fn a_repeated_key_anywhere_is_found(value in json_value(), key in "[a-z]{1,3}") {
            let text = format!(r#"[{value}, {{"{key}": 1, "{key}": 2}}]"#);
            prop_assert!(from_str(&text).is_err());
        }
    }
}
