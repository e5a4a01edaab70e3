//! What property tests across the workspace draw JSON from (the `testing` feature).

use proptest::prelude::*;
use serde_json::Value;

/// Any JSON value: numbers no double holds, any text, objects whose keys are not in order.
pub fn json_value() -> impl Strategy<Value = Value> {
    let number = prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| format!("{n}{n}")),
        (any::<i32>(), 0u32..1_000_000, -400i32..400).prop_map(|(i, f, e)| format!("{i}.{f}e{e:+}")),
    ]
    .prop_map(|text| serde_json::from_str::<Value>(&text).unwrap());
    let leaf =
        prop_oneof![Just(Value::Null), any::<bool>().prop_map(Value::Bool), number, ".*".prop_map(Value::String)];
    leaf.prop_recursive(4, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(".{0,3}", inner, 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().rev().collect())),
        ]
    })
}
