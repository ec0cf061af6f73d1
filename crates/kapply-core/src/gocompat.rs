//! Values written as Go writes them. kubectl and kube-apiserver are Go
//! programs: the bytes they send and store (the last-applied annotation,
//! patch bodies, a Secret's `data`, timestamps) and the strings they sort
//! list elements by come from Go's `encoding/json`, `fmt` and `strconv`.
//! Matching them byte for byte is what makes our annotation and patches
//! the ones kubectl would write; this module is the one place that knows
//! Go's spellings. No I/O.

use base64::Engine as _;
use serde_json::Value;

/// JSON as Go's `encoding/json` writes it: compact, map keys sorted (our
/// maps are ordered), `<`, `>`, `&`, U+2028 and U+2029 escaped, floats in
/// Go's notation (`1` for 1.0, `1e+21`, `0.000015`).
pub fn json(v: &Value) -> String {
    let mut out = String::new();
    write_json(v, &mut out);
    out
}

pub(crate) fn write_json(v: &Value, out: &mut String) {
    write_json_floats(v, out);
}

/// [`write_json`], saying whether it wrote a float (which reads back
/// otherwise: `1.0` is written `1`, an integer).
pub(crate) fn write_json_floats(v: &Value, out: &mut String) -> bool {
    match v {
        Value::Object(m) => {
            out.push('{');
            let mut floats = false;
            for (i, (k, x)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(k, out);
                out.push(':');
                floats |= write_json_floats(x, out);
            }
            out.push('}');
            floats
        }
        Value::Array(a) => {
            out.push('[');
            let mut floats = false;
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                floats |= write_json_floats(x, out);
            }
            out.push(']');
            floats
        }
        Value::String(s) => {
            write_string(s, out);
            false
        }
        Value::Number(n) => {
            // Integers as digits (what serde_json's Display writes, without
            // its serializer); floats in Go's notation.
            if let Some(u) = n.as_u64() {
                push_integer(u, false, out);
            } else if let Some(i) = n.as_i64() {
                push_integer(i.unsigned_abs(), i < 0, out);
            } else {
                match n.as_f64() {
                    Some(f) => out.push_str(&float_json(f)),
                    None => out.push_str(&n.to_string()),
                }
                return true;
            }
            false
        }
        Value::Bool(b) => {
            out.push_str(if *b { "true" } else { "false" });
            false
        }
        Value::Null => {
            out.push_str("null");
            false
        }
    }
}

/// An integer's decimal digits, `-` first when `negative`.
fn push_integer(mut n: u64, negative: bool, out: &mut String) {
    let mut buf = [0u8; 21];
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if negative {
        at -= 1;
        buf[at] = b'-';
    }
    for &b in &buf[at..] {
        out.push(char::from(b));
    }
}

/// The bytes [`write_string`] may write otherwise: what JSON escapes
/// (controls, `"`, `\\`), HTML's `<`, `>`, `&`, and 0xE2, the first byte
/// of U+2028 and U+2029.
const SPECIAL: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = b < 0x20 || matches!(b as u8, b'"' | b'\\' | b'<' | b'>' | b'&' | 0xe2);
        b += 1;
    }
    t
};

/// A JSON string with encoding/json's HTML escaping: serde_json's escapes
/// (`\"`, `\\`, `\b`, `\t`, `\n`, `\f`, `\r`, other controls as
/// `\u00xx`) plus `<`, `>`, `&`, U+2028 and U+2029 as `\uXXXX`. Written
/// in place: the annotation of every object is built with it.
fn write_string(s: &str, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    // Scanned by bytes: what is escaped is ASCII, or U+2028 / U+2029
    // (E2 80 A8 / A9), so a byte outside these never starts an escape and
    // most strings (no special byte at all) are one scan and one copy.
    let bytes = s.as_bytes();
    out.push('"');
    let Some(first) = bytes.iter().position(|&b| SPECIAL[usize::from(b)]) else {
        out.push_str(s);
        out.push('"');
        return;
    };
    let (mut start, mut i) = (0, first);
    while i < bytes.len() {
        let b = bytes[i];
        if !SPECIAL[usize::from(b)] {
            i += 1;
            continue;
        }
        let esc: &str = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            b'\t' => "\\t",
            b'\n' => "\\n",
            0x0c => "\\f",
            b'\r' => "\\r",
            b'<' => "\\u003c",
            b'>' => "\\u003e",
            b'&' => "\\u0026",
            0xe2 => match (bytes.get(i + 1), bytes.get(i + 2)) {
                (Some(0x80), Some(0xa8)) => "\\u2028",
                (Some(0x80), Some(0xa9)) => "\\u2029",
                // Another character starting E2: written as it is.
                _ => {
                    i += 1;
                    continue;
                }
            },
            _ => "",
        };
        // `i` is at a character's first byte (ASCII or E2).
        out.push_str(&s[start..i]);
        if esc.is_empty() {
            out.push_str("\\u00");
            out.push(HEX[usize::from(b >> 4)] as char);
            out.push(HEX[usize::from(b & 0xf)] as char);
        } else {
            out.push_str(esc);
        }
        i += if b == 0xe2 { 3 } else { 1 };
        start = i;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// encoding/json's float64: shortest round-trip digits, exponent form
/// below 1e-6 and from 1e21 on (`1e-7`, `1e+21`).
fn float_json(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        // Go pads positive exponents to two digits, not negative ones.
        exponent_form(f, false)
    } else {
        // Display prints the shortest round-trip digits without exponent.
        format!("{f}")
    }
}

/// `f` with the shortest digits in Go's exponent form: the exponent signed
/// and padded to two digits (`1e+21`), negative exponents too when
/// `pad_negative` (`%v`'s `1.5e-05`; encoding/json writes `1e-7`).
fn exponent_form(f: f64, pad_negative: bool) -> String {
    let s = format!("{f:e}");
    let Some((m, e)) = s.split_once('e') else {
        return s;
    };
    let (sign, digits) = match e.strip_prefix('-') {
        Some(d) => ('-', d),
        None => ('+', e),
    };
    if digits.len() < 2 && (sign == '+' || pad_negative) {
        format!("{m}e{sign}0{digits}")
    } else {
        format!("{m}e{sign}{digits}")
    }
}

/// `fmt.Sprintf("%v", v)` for the scalars of decoded JSON (numbers are
/// float64): how apimachinery names merge keys and primitive list
/// elements when it sorts and matches them.
pub fn sprint(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_f64() {
            Some(f) => sprint_float(f),
            None => n.to_string(),
        },
        other => other.to_string(),
    }
}

/// [`sprint`], borrowing a string value as it is.
pub fn sprint_cow(v: &Value) -> std::borrow::Cow<'_, str> {
    match v {
        Value::String(s) => std::borrow::Cow::Borrowed(s),
        other => std::borrow::Cow::Owned(sprint(other)),
    }
}

/// Go's `%v` for float64: `%g` with the shortest digits, exponent form
/// when the decimal exponent is < -4 or >= 6 (`fmt.Sprint(1e6)` is `1e+06`).
fn sprint_float(f: f64) -> String {
    if f == 0.0 {
        return "0".into();
    }
    let exp = f.abs().log10().floor() as i32;
    if !(-4..6).contains(&exp) {
        // Rust: 1e21 / 1.5e-5; Go: 1e+21 / 1.5e-05
        exponent_form(f, true)
    } else if f.fract() == 0.0 {
        format!("{}", f as i64)
    } else {
        format!("{f}")
    }
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 32)` for a finite value that
/// fits a float32; `None` for NaN and infinities (also beyond float32's
/// range), which each caller spells its own way.
pub fn format_float32(f: f64) -> Option<String> {
    let x = f as f32;
    if !x.is_finite() {
        return None;
    }
    if x == 0.0 {
        return Some(if x.is_sign_negative() { "-0" } else { "0" }.into());
    }
    // Shortest digits of the float32, as d.ddd e exp.
    let e = format!("{:e}", x.abs());
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mant.chars().filter(|c| *c != '.').collect();
    let sign = if x < 0.0 { "-" } else { "" };
    if !(-4..6).contains(&exp) {
        let rest = &digits[1..];
        let dot = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        return Some(format!(
            "{sign}{}{dot}e{esign}{:02}",
            &digits[..1],
            exp.abs()
        ));
    }
    let n = digits.len() as i32;
    let dp = exp + 1; // digits before the decimal point
    let body = if dp <= 0 {
        format!("0.{}{digits}", "0".repeat((-dp) as usize))
    } else if dp >= n {
        format!("{digits}{}", "0".repeat((dp - n) as usize))
    } else {
        format!("{}.{}", &digits[..dp as usize], &digits[dp as usize..])
    };
    Some(format!("{sign}{body}"))
}

/// A Go `[]byte` as encoding/json writes it (a Secret's `data` values):
/// standard base64 with padding.
pub fn encode_bytes(bytes: impl AsRef<[u8]>) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A Go `[]byte` as encoding/json reads it; `None` when the text is not
/// standard padded base64 ("illegal base64 data").
pub fn decode_bytes(text: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

/// A `metav1.Time` as Kubernetes writes it: RFC 3339 in UTC, whole seconds.
pub fn timestamp(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_escapes_html_and_writes_go_floats() {
        let v = json!({"b": [1, 0.5, 0.000015, 1e-7, 1e21, 12345678, -3, 1.0], "a": "<&>\u{2028}\u{2029}\"\n"});
        assert_eq!(
            json(&v),
            r#"{"a":"\u003c\u0026\u003e\u2028\u2029\"\n","b":[1,0.5,0.000015,1e-7,1e+21,12345678,-3,1]}"#
        );
        assert_eq!(json(&json!(1.5e300)), "1.5e+300");
        assert_eq!(json(&json!(-2.5e-9)), "-2.5e-9");
        assert_eq!(
            json(&json!({"z": null, "y": true})),
            r#"{"y":true,"z":null}"#
        );
        // Integers as serde_json spells them.
        for n in [
            json!(0),
            json!(7),
            json!(-7),
            json!(i64::MIN),
            json!(u64::MAX),
        ] {
            assert_eq!(json(&n), n.to_string());
        }
        let mut out = String::new();
        assert!(!write_json_floats(
            &json!({"a": [1, -2, "x", null, true]}),
            &mut out
        ));
        assert!(write_json_floats(&json!({"a": [1, {"b": 2.5}]}), &mut out));
    }

    #[test]
    fn strings_escape_as_serde_json_then_html() {
        // The escaping as first written: serde_json's, then HTML's.
        let reference = |s: &str| {
            let mut out = String::new();
            for ch in Value::String(s.into()).to_string().chars() {
                match ch {
                    '<' => out.push_str("\\u003c"),
                    '>' => out.push_str("\\u003e"),
                    '&' => out.push_str("\\u0026"),
                    '\u{2028}' => out.push_str("\\u2028"),
                    '\u{2029}' => out.push_str("\\u2029"),
                    c => out.push(c),
                }
            }
            out
        };
        let mut all: String = (0u32..0x300).filter_map(char::from_u32).collect();
        all.push_str("\u{2027}\u{2028}\u{2029}\u{202a}\u{7f}\u{ffff}\u{1f600}");
        for s in [
            all.as_str(),
            "",
            "plain",
            "a\"b\\c",
            "<tag a=\"1\">&amp;</tag>",
        ] {
            let mut out = String::new();
            write_string(s, &mut out);
            assert_eq!(out, reference(s), "{s:?}");
        }
    }

    #[test]
    fn sprint_is_go_percent_v() {
        assert_eq!(sprint(&json!(1000000)), "1e+06");
        assert_eq!(sprint(&json!(123456)), "123456");
        assert_eq!(sprint(&json!(0.5)), "0.5");
        assert_eq!(sprint(&json!(0.00001)), "1e-05");
        assert_eq!(sprint(&json!(1.5e21)), "1.5e+21");
        assert_eq!(sprint(&json!(0)), "0");
        assert_eq!(sprint(&json!("x")), "x");
        assert_eq!(sprint(&json!(null)), "<nil>");
        assert_eq!(sprint(&json!(false)), "false");
    }

    #[test]
    fn format_float32_is_strconv_g_32() {
        assert_eq!(format_float32(1.5).as_deref(), Some("1.5"));
        assert_eq!(format_float32(100000.0).as_deref(), Some("100000"));
        assert_eq!(format_float32(1e6).as_deref(), Some("1e+06"));
        assert_eq!(format_float32(0.0001).as_deref(), Some("0.0001"));
        assert_eq!(format_float32(0.00001).as_deref(), Some("1e-05"));
        assert_eq!(format_float32(-2.5e-7).as_deref(), Some("-2.5e-07"));
        // float32 has fewer digits than float64.
        assert_eq!(format_float32(0.1).as_deref(), Some("0.1"));
        assert_eq!(format_float32(1.23456789123).as_deref(), Some("1.2345679"));
        assert_eq!(format_float32(-0.0).as_deref(), Some("-0"));
        assert_eq!(format_float32(1e39), None);
        assert_eq!(format_float32(f64::NAN), None);
    }

    #[test]
    fn bytes_are_standard_base64() {
        assert_eq!(encode_bytes("hunter2"), "aHVudGVyMg==");
        assert_eq!(
            decode_bytes("aHVudGVyMg==").as_deref(),
            Some(&b"hunter2"[..])
        );
        // Go's decoder refuses unpadded and URL-safe text.
        assert_eq!(decode_bytes("aHVudGVyMg"), None);
        assert_eq!(decode_bytes("-_8="), None);
    }

    #[test]
    fn timestamps_are_utc_whole_seconds() {
        let t: jiff::Timestamp = "2026-01-02T03:04:05.678+01:00".parse().expect("timestamp");
        assert_eq!(timestamp(t), "2026-01-02T02:04:05Z");
    }
}
