//! The `JSON.stringify` writer, against Node itself.

use canon_local::json::{to_js_json_compact, to_js_json_pretty};
use serde_json::{json, Value};

use crate::support::{assert_js_pretty, node_ok, temp_home};

#[test]
fn numbers_print_like_javascript() {
    let cases: &[(Value, &str)] = &[
        (json!(1.0), "1"),
        (json!(-0.0), "0"),
        (json!(100), "100"),
        (json!(0.1), "0.1"),
        (json!(123.456), "123.456"),
        (json!(1e21), "1e+21"),
        (json!(1e20), "100000000000000000000"),
        (json!(1.5e-7), "1.5e-7"),
        (json!(0.000001), "0.000001"),
        (json!(-2.5e300), "-2.5e+300"),
        (json!(9007199254740993_u64), "9007199254740992"),
    ];
    for (value, expected) in cases {
        assert_eq!(to_js_json_compact(value), *expected, "for {value}");
    }
}

#[test]
fn array_index_keys_come_first_like_v8() {
    let value: Value =
        serde_json::from_str(r#"{"b":1,"10":2,"2":3,"01":4,"a":5,"4294967295":6,"0":7}"#).unwrap();
    assert_eq!(
        to_js_json_compact(&value),
        r#"{"0":7,"2":3,"10":2,"b":1,"01":4,"a":5,"4294967295":6}"#
    );
}

#[test]
fn pretty_layout_is_two_space_without_trailing_newline() {
    let value = json!({"a": [1, {"b": []}], "c": {}});
    assert_eq!(
        to_js_json_pretty(&value),
        "{\n  \"a\": [\n    1,\n    {\n      \"b\": []\n    }\n  ],\n  \"c\": {}\n}"
    );
}

#[test]
fn tricky_values_are_byte_identical_to_node_json_stringify() {
    crate::require_node!();
    let t = temp_home();
    let text = r#"{"2":true,"s":"quote\" back\\ slash/ nl\n tab\t bs\u0008 ff\u000c cr\r nul\u0000 us\u001f del\u007f ls\u2028 ps\u2029 é 目 😀","n":[1.0,1e21,1.5e-7,0.000001,-0.0,12345678901234567890,0.1,0.30000000000000004,5e-324,1.7976931348623157e308,2.2250738585072014e-308,9007199254740993,123456789012345680000,0.1e-6,1.0000000000000002,4.35,-1e-7],"e":{},"a":[],"1":null,"z":{"10":1,"9":2}}"#;
    let value: Value = serde_json::from_str(text).unwrap();
    std::fs::create_dir_all(t.home.root()).unwrap();
    let path = t.home.root().join("tricky.json");
    std::fs::write(&path, to_js_json_pretty(&value)).unwrap();
    assert_js_pretty(&t.home, &path);

    let compact = t.home.root().join("compact.json");
    std::fs::write(&compact, to_js_json_compact(&value)).unwrap();
    let js = node_ok(&t.home, "stringifyCompactFile", json!([compact]));
    assert_eq!(js.as_str(), Some(to_js_json_compact(&value).as_str()));
}
