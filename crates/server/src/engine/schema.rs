//! Property tables: the JSON schema they publish, and the argument check a
//! zod-validated server makes before any handler runs.
//!
//! One table describes each tool's properties (see [`super::tools`]); the
//! same table is published in `tools/list` and used to check a call's
//! arguments, so the two cannot drift apart. The check reports what upstream's zod schemas report: a
//! `null` for any property, a missing required property, a value of the
//! wrong type or outside its enum or bounds, each as one line naming the
//! property's path, in the order the properties are declared. Properties
//! the table does not name are ignored, as zod strips them.

use serde_json::{Map, Value, json};

/// The largest integer a JSON number holds exactly (`Number.MAX_SAFE_INTEGER`).
pub(crate) const MAX_SAFE: i64 = 9_007_199_254_740_991;

/// A lower bound on an integer.
#[derive(Clone, Copy)]
pub(crate) enum Lo {
    /// Only the safe-integer range.
    Safe,
    /// Greater than.
    Gt(i64),
    /// Greater than or equal to.
    Ge(i64),
}

/// What one property holds.
pub(crate) enum Ty {
    /// Any string.
    Str,
    /// A string of bounded length.
    StrLen(u64, u64),
    /// A string matching a pattern (its source, and the matcher).
    Pattern(&'static str, fn(&str) -> bool),
    /// An integer with a lower bound and an upper bound (`None`: safe range).
    Int(Lo, Option<i64>),
    /// A number with optional inclusive bounds.
    Num(Option<f64>, Option<f64>),
    /// A boolean.
    Bool,
    /// The boolean literal.
    Const(bool),
    /// A string literal (a union's discriminator).
    Lit(&'static str),
    /// One of these strings.
    Enum(&'static [&'static str]),
    /// An object of anything.
    Record,
    /// An object of non-negative integers.
    Counts,
    /// A string or a number.
    StrOrNum,
    /// A list of one type.
    List(&'static Ty),
    /// Two numbers.
    Pair,
    /// An object with these properties.
    Obj(&'static [Prop]),
    /// Objects told apart by their `kind`.
    Kind(&'static [&'static [Prop]]),
}

/// One property of an object.
pub(crate) struct Prop {
    name: &'static str,
    ty: Ty,
    required: bool,
}

pub(crate) const fn req(name: &'static str, ty: Ty) -> Prop {
    Prop {
        name,
        ty,
        required: true,
    }
}

pub(crate) const fn opt(name: &'static str, ty: Ty) -> Prop {
    Prop {
        name,
        ty,
        required: false,
    }
}

pub(crate) fn is_cert_id(text: &str) -> bool {
    text.strip_prefix("cert_").is_some_and(|hex| {
        hex.len() == 32
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

pub(crate) fn is_sha256(text: &str) -> bool {
    adk_computer_use::digest::is_prefixed_sha256(text)
}

pub(crate) fn object_schema(props: &[Prop]) -> Map<String, Value> {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for prop in props {
        properties.insert(prop.name.into(), Value::Object(schema_of(&prop.ty)));
        if prop.required {
            required.push(json!(prop.name));
        }
    }
    let mut schema = Map::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        schema.insert("required".into(), Value::Array(required));
    }
    schema
}

fn schema_of(ty: &Ty) -> Map<String, Value> {
    let value = match ty {
        Ty::Str => json!({ "type": "string" }),
        Ty::StrLen(min, max) => json!({ "type": "string", "minLength": min, "maxLength": max }),
        Ty::Pattern(source, _) => json!({ "type": "string", "pattern": source }),
        Ty::Int(lo, hi) => {
            let mut int = json!({ "type": "integer" });
            match lo {
                Lo::Safe => int["minimum"] = json!(-MAX_SAFE),
                Lo::Gt(n) => int["exclusiveMinimum"] = json!(n),
                Lo::Ge(n) => int["minimum"] = json!(n),
            }
            int["maximum"] = json!(hi.unwrap_or(MAX_SAFE));
            int
        }
        Ty::Num(min, max) => {
            // A whole bound is written as a JSON integer, as upstream's
            // schemas write it (`0`, not `0.0`).
            let bound = |n: f64| {
                if n.fract() == 0.0 && n.abs() < 9.0e15 {
                    json!(n as i64)
                } else {
                    json!(n)
                }
            };
            let mut number = json!({ "type": "number" });
            if let Some(min) = min {
                number["minimum"] = bound(*min);
            }
            if let Some(max) = max {
                number["maximum"] = bound(*max);
            }
            number
        }
        Ty::Bool => json!({ "type": "boolean" }),
        Ty::Const(flag) => json!({ "type": "boolean", "const": flag }),
        Ty::Lit(text) => json!({ "type": "string", "const": text }),
        Ty::Enum(values) => json!({ "type": "string", "enum": values }),
        Ty::Record => json!({
            "type": "object", "propertyNames": { "type": "string" }, "additionalProperties": {}
        }),
        Ty::Counts => json!({
            "type": "object", "propertyNames": { "type": "string" },
            "additionalProperties": { "type": "integer", "minimum": 0, "maximum": MAX_SAFE }
        }),
        Ty::StrOrNum => json!({ "type": ["string", "number"] }),
        Ty::List(item) => json!({ "type": "array", "items": schema_of(item) }),
        Ty::Pair => json!({
            "type": "array", "items": [{ "type": "number" }, { "type": "number" }],
            "additionalItems": false, "minItems": 2, "maxItems": 2
        }),
        Ty::Obj(props) => Value::Object(object_schema(props)),
        Ty::Kind(variants) => json!({
            "oneOf": variants.iter().map(|v| Value::Object(object_schema(v))).collect::<Vec<_>>()
        }),
    };
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// The JSON type zod names for a value it received.
fn received(value: Option<&Value>) -> &'static str {
    match value {
        None => "undefined",
        Some(Value::Null) => "null",
        Some(Value::Bool(_)) => "boolean",
        Some(Value::Number(_)) => "number",
        Some(Value::String(_)) => "string",
        Some(Value::Array(_)) => "array",
        Some(Value::Object(_)) => "object",
    }
}

fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

pub(crate) fn check_props(
    props: &[Prop],
    args: &Map<String, Value>,
    path: &str,
    issues: &mut Vec<String>,
) {
    for prop in props {
        let value = args.get(prop.name);
        if value.is_none() && !prop.required {
            continue;
        }
        check(&prop.ty, value, &child(path, prop.name), issues);
    }
}

fn expected(what: &str, value: Option<&Value>, path: &str, issues: &mut Vec<String>) {
    issues.push(format!(
        "Invalid input: expected {what}, received {} at {path}",
        received(value)
    ));
}

/// A JSON number as JavaScript sees it.
fn number(value: &Value) -> Option<f64> {
    value.as_f64()
}

fn check(ty: &Ty, value: Option<&Value>, path: &str, issues: &mut Vec<String>) {
    match ty {
        Ty::Str => {
            if !matches!(value, Some(Value::String(_))) {
                expected("string", value, path, issues);
            }
        }
        Ty::StrLen(min, max) => match value {
            Some(Value::String(text)) => {
                let length = text.encode_utf16().count() as u64;
                if length < *min {
                    issues.push(format!(
                        "Too small: expected string to have >={min} characters at {path}"
                    ));
                } else if length > *max {
                    issues.push(format!(
                        "Too big: expected string to have <={max} characters at {path}"
                    ));
                }
            }
            _ => expected("string", value, path, issues),
        },
        Ty::Pattern(source, matches) => match value {
            Some(Value::String(text)) if matches(text) => {}
            Some(Value::String(_)) => issues.push(format!(
                "Invalid string: must match pattern /{source}/ at {path}"
            )),
            _ => expected("string", value, path, issues),
        },
        Ty::Int(lo, hi) => check_int(*lo, *hi, value, path, issues),
        Ty::Num(min, max) => match value.and_then(number) {
            Some(n) if min.is_some_and(|m| n < m) => issues.push(format!(
                "Too small: expected number to be >={} at {path}",
                min.unwrap_or_default()
            )),
            Some(n) if max.is_some_and(|m| n > m) => issues.push(format!(
                "Too big: expected number to be <={} at {path}",
                max.unwrap_or_default()
            )),
            Some(_) => {}
            None => expected("number", value, path, issues),
        },
        Ty::Bool => {
            if !matches!(value, Some(Value::Bool(_))) {
                expected("boolean", value, path, issues);
            }
        }
        Ty::Const(flag) => {
            if value != Some(&Value::Bool(*flag)) {
                issues.push(format!("Invalid input: expected {flag} at {path}"));
            }
        }
        Ty::Lit(text) => {
            if value.and_then(Value::as_str) != Some(*text) {
                issues.push(format!("Invalid input: expected \"{text}\" at {path}"));
            }
        }
        Ty::Enum(values) => {
            if !value
                .and_then(Value::as_str)
                .is_some_and(|v| values.contains(&v))
            {
                let options: Vec<String> = values.iter().map(|v| format!("\"{v}\"")).collect();
                issues.push(format!(
                    "Invalid option: expected one of {} at {path}",
                    options.join("|")
                ));
            }
        }
        Ty::Record => {
            if !matches!(value, Some(Value::Object(_))) {
                expected("record", value, path, issues);
            }
        }
        Ty::Counts => match value {
            Some(Value::Object(map)) => {
                for (key, count) in map {
                    check_int(Lo::Ge(0), None, Some(count), &child(path, key), issues);
                }
            }
            _ => expected("record", value, path, issues),
        },
        Ty::StrOrNum => {
            if !matches!(value, Some(Value::String(_) | Value::Number(_))) {
                issues.push(format!("Invalid input at {path}"));
            }
        }
        Ty::List(item) => match value {
            Some(Value::Array(items)) => {
                for (i, entry) in items.iter().enumerate() {
                    check(item, Some(entry), &format!("{path}[{i}]"), issues);
                }
            }
            _ => expected("array", value, path, issues),
        },
        Ty::Pair => match value {
            Some(Value::Array(items)) if items.len() < 2 => issues.push(format!(
                "Too small: expected array to have >=2 items at {path}"
            )),
            Some(Value::Array(items)) if items.len() > 2 => issues.push(format!(
                "Too big: expected array to have <=2 items at {path}"
            )),
            Some(Value::Array(items)) => {
                for (i, entry) in items.iter().enumerate() {
                    check(
                        &Ty::Num(None, None),
                        Some(entry),
                        &format!("{path}[{i}]"),
                        issues,
                    );
                }
            }
            _ => expected("tuple", value, path, issues),
        },
        Ty::Obj(props) => match value {
            Some(Value::Object(map)) => check_props(props, map, path, issues),
            _ => expected("object", value, path, issues),
        },
        Ty::Kind(variants) => check_kind(variants, value, path, issues),
    }
}

fn check_int(lo: Lo, hi: Option<i64>, value: Option<&Value>, path: &str, issues: &mut Vec<String>) {
    let Some(n) = value.and_then(number) else {
        expected("number", value, path, issues);
        return;
    };
    if n.fract() != 0.0 || !n.is_finite() {
        issues.push(format!(
            "Invalid input: expected int, received number at {path}"
        ));
        return;
    }
    let too_small = match lo {
        Lo::Safe => (n < -(MAX_SAFE as f64)).then(|| format!("int to be >={}", -MAX_SAFE)),
        Lo::Gt(m) => (n <= m as f64).then(|| format!("number to be >{m}")),
        Lo::Ge(m) => (n < m as f64).then(|| format!("number to be >={m}")),
    };
    if let Some(what) = too_small {
        issues.push(format!("Too small: expected {what} at {path}"));
        return;
    }
    let too_big = match hi {
        Some(m) => (n > m as f64).then(|| format!("number to be <={m}")),
        None => (n > MAX_SAFE as f64).then(|| format!("int to be <={MAX_SAFE}")),
    };
    if let Some(what) = too_big {
        issues.push(format!("Too big: expected {what} at {path}"));
    }
}

fn check_kind(variants: &[&[Prop]], value: Option<&Value>, path: &str, issues: &mut Vec<String>) {
    let Some(Value::Object(map)) = value else {
        expected("object", value, path, issues);
        return;
    };
    let kind = map.get("kind").and_then(Value::as_str);
    let variant = variants.iter().find(|props| {
        props
            .first()
            .is_some_and(|p| matches!(p.ty, Ty::Lit(k) if Some(k) == kind))
    });
    let Some(props) = variant else {
        let kinds: Vec<String> = variants
            .iter()
            .filter_map(|props| match props.first().map(|p| &p.ty) {
                Some(Ty::Lit(k)) => Some(format!("'{k}'")),
                _ => None,
            })
            .collect();
        issues.push(format!(
            "Invalid discriminator value. Expected {} at {}",
            kinds.join(" | "),
            child(path, "kind")
        ));
        return;
    };
    let before = issues.len();
    check_props(props, map, path, issues);
    // A UI element is found by its role or its label: one is required,
    // checked once the object itself is well formed.
    if issues.len() == before && kind == Some("ui_element") {
        let named = |key: &str| {
            map.get(key)
                .and_then(Value::as_str)
                .is_some_and(|s| !s.is_empty())
        };
        if !named("role") && !named("label") {
            issues.push(format!("role or label is required at {path}"));
        }
    }
}
