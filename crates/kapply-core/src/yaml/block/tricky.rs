//! Hand-made tricky inputs and mutations of them, read by this reader and
//! by saphyr: wherever this reader answers, it must answer what saphyr's
//! path does (and never panic).
use super::super::{Doc, parse, parse_values_saphyr};
use super::read;

fn check(text: &str) -> Option<String> {
    let mine = std::panic::catch_unwind(|| read(text));
    let mine = match mine {
        Ok(m) => m,
        Err(_) => return Some(format!("PANIC in read: {text:?}")),
    };
    let mine = mine?;
    let theirs: Option<Vec<Doc>> = parse_values_saphyr(text);
    if Some(&mine) == theirs.as_ref() {
        return None;
    }
    let full = match parse(text) {
        Ok(n) => format!(
            "Ok({:?})",
            n.iter().map(|n| n.to_value()).collect::<Vec<_>>()
        ),
        Err(e) => format!("Err({e})"),
    };
    Some(format!(
        "DIVERGE {}\n  block:  {}\n  saphyr: {}\n  full:   {}",
        short(&format!("{text:?}")),
        short(&format!("{mine:?}")),
        short(&format!("{theirs:?}")),
        short(&full)
    ))
}

fn short(s: &str) -> String {
    let c: Vec<char> = s.chars().collect();
    if c.len() <= 300 {
        s.to_string()
    } else {
        format!(
            "{}...({} chars)...{}",
            c[..150].iter().collect::<String>(),
            c.len(),
            c[c.len() - 100..].iter().collect::<String>()
        )
    }
}

fn run(inputs: &[String]) -> (Vec<String>, usize) {
    let mut out = Vec::new();
    let mut accepted = 0;
    for t in inputs {
        if read(t).is_some() {
            accepted += 1;
        }
        if let Some(m) = check(t) {
            out.push(m);
        }
    }
    (out, accepted)
}

fn cases() -> Vec<String> {
    let mut v: Vec<String> = [
        // comments and plain scalars
        "key: a #c\n",
        "key: a#c\n",
        "key: a # c: d\n",
        "key: a #\n",
        "url: http://x:80/y\n",
        "a: b]\n",
        "a: b}\n",
        "a: b, c\n",
        "a: b[c\n",
        "a: x]y\n",
        "a: b :c\n",
        "a: b:#c\n",
        "a: b|c\n",
        "a: b>c\n",
        "a: b'c\n",
        "a: b\"c\n",
        "a: b%c\n",
        "a: b@c\n",
        "a: b`c\n",
        "a: b&c\n",
        "a: b*c\n",
        "a: b!c\n",
        "a: ---\n",
        "a: ...\n",
        "a: -\n",
        "a: --\n",
        "a: -x\n",
        "a: -[x]\n",
        "a: -]\n",
        "a: -,\n",
        "a: -{\n",
        "a: x -\n",
        "a: x - y\n",
        "a: 'x' \n",
        "a: x   \n",
        "a:   x\n",
        "a:\n\n\nb: 1\n",
        "a: 1 \nb: 2  \n",
        "a: \u{a0}x\n",
        "a: x\u{a0}\n",
        "\u{a0}a: 1\n",
        "a\u{a0}: 1\n",
        "a: x\u{a0}#c\n",
        "a: \u{3000}\n",
        "a: é\n",
        "é: ü\n",
        "a: 😀\n",
        "😀: 1\n",
        "a: \u{e000}\n",
        "a: \u{fffd}\n",
        "a: \u{1f}\n",
        "a: \u{7f}\n",
        "a: \u{85}\n",
        "a: \u{2028}\n",
        "a: x\u{feff}\n",
        "a: 'x\u{feff}'\n",
        // quoted
        "a: 'it''s'\n",
        "a: ''''\n",
        "a: ''\n",
        "a: \"\"\n",
        "a: \"\\\"\"\n",
        "a: \"\\u00e9\"\n",
        "a: \"\\x41\"\n",
        "a: \"\\U0001F600\"\n",
        "a: \"\\ud800\"\n",
        "a: \"\\uDFFF\"\n",
        "a: \"\\u00E9x\"\n",
        "a: \"a # b\"\n",
        "a: \"a: b\"\n",
        "a: 'a: b'\n",
        "a: 'a # b'\n",
        "a: \"a\" # c\n",
        "a: \"a\"# c\n",
        "a: 'a'#c\n",
        "a: \"a\"b\n",
        "a: \"a\" b\n",
        "a: \"a\":\n",
        "a: \"a\": b\n",
        "a: 'a':b\n",
        "a: \"x\n  y\"\n",
        "a: 'x\n  y'\n",
        "a: \"x\\\n  y\"\n",
        "a: \"\\t\\n\\r\\0\\b\\f\\/\\\\\"\n",
        "a: \"\\ \"\n",
        "a: \"\\_\"\n",
        "a: \"\\N\"\n",
        "a: \"  x  \"\n",
        "a: ' x '\n",
        "a: \"\\u0000\"\n",
        "a: \"\\u00\"\n",
        "a: \"\\u00é9\"\n",
        "a: \"\\uéééé\"\n",
        "a: \"\\\"\n",
        "a: \"\\\n",
        "a: \"é\\u00e9é\"\n",
        "\"a\": 1\n",
        "'a': 1\n",
        "\"a\" : 1\n",
        "\"a\":1\n",
        "'a':1\n",
        "\"\": 1\n",
        "'': 1\n",
        "\"a\\nb\": 1\n",
        "\"a:b\": 1\n",
        "\"a\": 'b'\n",
        "\"1\": 1\n",
        "'true': 1\n",
        "\"~\": 1\n",
        "- \"a\": 1\n",
        "x:\n- \"a\": 1\n  'b': 2\n",
        "x:\n- 'a' : 1\n",
        // literal / folded
        "a: |+\n  x\n\n",
        "a: |2\n   x\n",
        "a: |-\n  x\n\n\n",
        "a: |\n  x\n    y\n  z\n",
        "a: |\n  x",
        "a: |-\n  x",
        "a: |\n  x\n",
        "a: |\n  x\n  ",
        "a: |\n  x\n   ",
        "a: |\n  x\n \n",
        "a: |\n  x\n   \n",
        "a: |\n  x\n\n  y\n",
        "a: |\n  x\n  \n  y\n",
        "a: |\n  x\n   \n  y\n",
        "a: |\n  x\n# c\n",
        "a: |\n  x\n # c\n",
        "a: |\n    x\n  # c\nb: 1\n",
        "a: |\n  x\n  # c\n",
        "a: |\n  # c\n  x\n",
        "a: |\n# c\n  x\n",
        "a: |\n\n  x\n",
        "a: |\n  \n  x\n",
        "a: |\nb: 1\n",
        "a: |\n",
        "a: |",
        "a: |-\n",
        "a: |\n x\nb: 1\n",
        "a: > \n  x\n",
        "a: >\n  x\n  y\n",
        "a: | #c\n  x\n",
        "a: |#c\n  x\n",
        "a: |  \n  x\n",
        "a: |-  # c\n  x\n",
        "a: |1\n  x\n",
        "a: |0\n x\n",
        "a: |x\n  x\n",
        "a: |-x\n x\n",
        "a: ||\n x\n",
        "a: |\n  x\n---\nb: 1\n",
        "a: |\n  x\n...\n",
        "a: |\n  ---\n",
        "a: |\n  x\n---",
        "k:\n- |\n x\n- y\n",
        "k:\n- |\n  x\n- y\n",
        "k:\n  - |\n   x\n",
        "k:\n  - |\n  x\n",
        "- a: |\n   x\n",
        "x:\n- a: |\n   x\n  b: 1\n",
        "x:\n- a: |\n    x\n  b: 1\n",
        "x:\n- a: |\n  x\n",
        "  a: |\n   x\n",
        "  a: |\n  x\n",
        "a:\n  b: |\n      x\n    c: 1\n",
        "a: |\n  x\n\tb\n",
        "a: |\n  x\n \n  y\n",
        "a: |\n  x\n\n\nb: 1\n",
        "a: |-\n  x\n\n\nb: 1\n",
        "a: |\n  x  \n",
        "a: |\n  x\n  y\n\n",
        "a: |\n   x\n  y\n",
        "a: |\n  x\n   y\n",
        "a: |\n  - x\n  - y\n",
        "a: |\n  a: b\n",
        "a: |\n  'x\n",
        "a: |\n  \"x\n",
        "a: |\n  x # not a comment\n",
        "a: |\n  {x\n",
        "a: |\n  x\n ",
        "a: |\n  x\n\n ",
        "a: |\n  x\n  \n",
        "items:\n- |\n  x\n",
        "a: |\n  é\n",
        "a: |\n    x\n   \n  y\n",
        // sequences
        "- - a\n",
        "a:\n- - a\n",
        "a:\n  - - a\n",
        "- key: v\n  k2: v2\n",
        "a:\n- key: v\n  k2: v2\n",
        "a:\n- key: v\n   k2: v2\n",
        "a:\n- key: v\n k2: v2\n",
        "a:\n- x\nb: 1\n",
        "a:\n  - x\n  b: 1\n",
        "a:\n  - x\n b: 1\n",
        "a:\n- x\n  - y\n",
        "a:\n -x\n",
        "a:\n- \n",
        "a:\n-\n",
        "a:\n-\nb: 1\n",
        "a:\n- # c\n  b: 1\n",
        "a:\n-   b: 1\n    c: 2\n",
        "a:\n-   b: 1\n  c: 2\n",
        "a:\n- b:\n  - c\n  d: 1\n",
        "a:\n- b:\n  - c\n",
        "a:\n- b:\n - c\n",
        "a:\n- b:\n    - c\n",
        "a:\n-x\n",
        "a:\n-#\n",
        "a:\n- x # c\n  y\n",
        "a:\n- x # c\n- y\n",
        "a:\n  - x # c\n    y\n",
        "a: x # c\n  y\n",
        "a:\n- x\n- y\n-\n",
        "a:\n - x\n - y\n",
        "a:\n   - x\n   - y\n  \n",
        "a:\n- [x]\n- {a: b}\n",
        "a:\n- [x]: y\n",
        "a:\n- {a: b}: c\n",
        "a:\n- ---\n",
        "a:\n- ...\n",
        "a:\n- -x\n",
        "a:\n- - \n",
        "a:\n- ? x\n",
        "a:\n-\n  - x\n  b: 1\n",
        "a:\n  -\n    - a\n    b: 1\n",
        "a:\n-\n a: 1\n",
        // keys and mapping structure
        "key:\nnext: 1\n",
        "key:\n  \nnext: 1\n",
        "a:\n  b:\nc: 1\n",
        "a: 1\na: 2\n",
        "a: b: c\n",
        "key: - a\n",
        "key: -a\n",
        "a b: c\n",
        "a  b: c\n",
        "a : b\n",
        "a:b: c\n",
        "a:b:c: d\n",
        "a:b\n",
        "a: 1\n b: 2\n",
        "  a: 1\nb: 2\n",
        " a: 1\n b: 2\n",
        "   a: 1\n   b:\n      c: 1\n",
        "a#b: c\n",
        "a #b: c\n",
        "a]: 1\n",
        "a,b: 1\n",
        "a'b: 1\n",
        "a?b: 1\n",
        "?a: 1\n",
        ":a: 1\n",
        "-a: 1\n",
        "a-: 1\n",
        "a%: 1\n",
        "%a: 1\n",
        "@a: 1\n",
        "`a: 1\n",
        "!a: 1\n",
        "&a: 1\n",
        "*a: 1\n",
        "|a: 1\n",
        ">a: 1\n",
        "a|: 1\n",
        "a>: 1\n",
        "a!: 1\n",
        "a&: 1\n",
        "a*: 1\n",
        "a@: 1\n",
        "a`: 1\n",
        "1: a\n",
        "1.5: a\n",
        "0x1F: a\n",
        "true: a\n",
        "yes: a\n",
        "y: a\n",
        "n: a\n",
        "on: a\n",
        "off: a\n",
        "null: a\n",
        "~: a\n",
        "Null: a\n",
        "NULL: a\n",
        "1e3: a\n",
        "-1: a\n",
        "+1: a\n",
        "0o12: a\n",
        "012: a\n",
        "1_000: a\n",
        ".inf: a\n",
        ".nan: a\n",
        "2001-12-14: a\n",
        "2001-12-14t21:59:43.10-05:00: a\n",
        "<<: {a: 1}\n",
        "a: 1\n<<: {b: 2}\n",
        "=: 1\n",
        "a: =\n",
        "? complex key\n: v\n",
        "? a\n",
        "a: 1\n? b\n",
        "a:\n  ? b\n  : c\n",
        // YAML 1.1 scalars as values
        "a: yes\n",
        "a: no\n",
        "a: on\n",
        "a: off\n",
        "a: y\n",
        "a: n\n",
        "a: Y\n",
        "a: N\n",
        "a: YES\n",
        "a: Yes\n",
        "a: True\n",
        "a: TRUE\n",
        "a: tRUE\n",
        "a: 0o12\n",
        "a: 012\n",
        "a: 09\n",
        "a: 0x1F\n",
        "a: 0X1F\n",
        "a: 0b101\n",
        "a: 1_000\n",
        "a: 1_0.5\n",
        "a: .inf\n",
        "a: -.inf\n",
        "a: .NaN\n",
        "a: ~\n",
        "a: null\n",
        "a: Null\n",
        "a: NULL\n",
        "a: nULL\n",
        "a: 1e3\n",
        "a: 1E3\n",
        "a: 1.e3\n",
        "a: +1\n",
        "a: -0\n",
        "a: +0.5\n",
        "a: .5\n",
        "a: 5.\n",
        "a: 1.0\n",
        "a: 2001-12-14\n",
        "a: 2001-12-14 21:59:43.10 -5\n",
        "a: 99999999999999999999\n",
        "a: -9223372036854775808\n",
        "a: 18446744073709551616\n",
        "a: 1:20\n",
        "a: 190:20:30\n",
        "a: 0.1e-400\n",
        "a: 1e400\n",
        "a: 0x\n",
        "a: 0o\n",
        "a: +\n",
        "a: .\n",
        "a: =\n",
        "a: <<\n",
        // flow
        "a: {a: [1, {b: c}], }\n",
        "a: {a: [1, {b: c}]}\n",
        "a: [\"a,b\", 'c,d']\n",
        "a: []\n",
        "a: {}\n",
        "a: [ ]\n",
        "a: { }\n",
        "a: [1,\n  2]\n",
        "a: [a -]\n",
        "a: [a -, b]\n",
        "a: {k: a -}\n",
        "a: [a - b]\n",
        "a: [a -b]\n",
        "a: [-a]\n",
        "a: [--]\n",
        "a: [-]\n",
        "a: [:a]\n",
        "a: [?a]\n",
        "a: [a:]\n",
        "a: [a:b]\n",
        "a: [a: b]\n",
        "a: [a#b]\n",
        "a: [a #b]\n",
        "a: {a:b}\n",
        "a: {a: b c}\n",
        "a: {a: b c: d}\n",
        "a: {\"a\":b}\n",
        "a: {\"a\": b}\n",
        "a: {'a': b}\n",
        "a: [a b c]\n",
        "a: [http://x:80/y]\n",
        "a: {url: http://x:80}\n",
        "a: [a]]\n",
        "a: [a]x\n",
        "a: [a] #c\n",
        "a: [a]#c\n",
        "a: [a] : b\n",
        "a: [a, ]\n",
        "a: [a,]\n",
        "a: [,]\n",
        "a: [a,,b]\n",
        "a: {a: }\n",
        "a: {a}\n",
        "a: {a: 1, a: 2}\n",
        "a: {a: b, c}\n",
        "a: [a'b]\n",
        "a: [a\"b]\n",
        "a: ['a'b]\n",
        "a: [\"a\"b]\n",
        "a: ['a' , b]\n",
        "a: [ a , b ]\n",
        "a: [a  ]\n",
        "a: [.inf]\n",
        "a: {<<: {a: 1}}\n",
        "a: [a%b]\n",
        "a: [%b]\n",
        "a: [a@b]\n",
        "a: [a!b]\n",
        "a: [!b]\n",
        "a: [&b]\n",
        "a: [*b]\n",
        "a: [a*b]\n",
        "a: [|]\n",
        "a: [>]\n",
        "a: [a|b]\n",
        "a: [a>b]\n",
        "a: {a: [b]c}\n",
        "a: [[[[[]]]]]\n",
        "a: {a: {b: {c: {}}}}\n",
        "a: [a:b:c]\n",
        "a: [a::b]\n",
        "a: [a:,b]\n",
        "a: {a:: b}\n",
        "a: {a:b: c}\n",
        "a: {a: b:c}\n",
        "a: {a: :b}\n",
        "a: {:a: b}\n",
        "a: {?a: b}\n",
        "a: {-a: b}\n",
        "a: [-1, +1, 0x1F, yes, ~, null, '']\n",
        "a: {1: a, yes: b, ~: c}\n",
        "a: {y: 1}\n",
        "a: {\"y\": 1}\n",
        "a: [y, n]\n",
        "a: ['y']\n",
        "a: [é, 😀]\n",
        "a: {é: 😀}\n",
        "a: [a,b]\n",
        "a: {a: b,c: d}\n",
        "a: {a: b ,c: d}\n",
        "a: [ 'a' ]\n",
        "a: [\"a\\\"b\"]\n",
        "a: [\"\\x41\"]\n",
        "a: {a: \"\\u00e9\"}\n",
        "a: [a\u{a0}]\n",
        "a: [a\u{a0}, b]\n",
        "a: {a: [1, 2], b: {}}\n",
        "a: [{}]\n",
        "a: [{a: 1}, {b: 2}]\n",
        "a: [[a], [b]]\n",
        "- [a]\n",
        "a:\n- [a, b]\n- {c: d}\n",
        "a: {\"a\": [\"b\"]}\n",
        "a: {a: [\"b\",\"c\"]}\n",
        "a: {a: [b , c ]}\n",
        "a: [a ]\n",
        "a: [ a]\n",
        "a: [\ta]\n",
        // documents / directives
        "--- # c\na: 1\n",
        "--- |\n  x\n",
        "--- a: 1\n",
        "---a: 1\n",
        "a: 1\n...\n",
        "a: 1\n... # c\n",
        "%YAML 1.2\n---\na: 1\n",
        "%YAML 1.1\n---\na: 1\n",
        "---\n---\n",
        "---\n",
        "",
        "\n",
        "# c\n",
        "# c\n# d\n",
        "   \n",
        "---\n# c\n---\na: 1\n",
        "a: 1\n---\nb: 2\n---\n",
        "a: 1\n--- \nb: 2\n",
        "a: 1\n---   # c\nb: 2\n",
        "a: 1\n ---\n",
        "a:\n  ---\n",
        "a: 1\n--\n",
        "a: 1\n----\n",
        "a: 1\n---\n  b: 1\n",
        "a: 1\n---\n- x\n",
        "a: 1\n---\nx\n",
        "---\n~\n",
        "---\nnull\n",
        "a: 1\n---\n\n\n",
        "\u{feff}a: 1\n",
        "a: 1\n\u{feff}b: 2\n",
        "a: 1\n---\n\u{feff}b: 2\n",
        // anchors, tags
        "a: &x 1\nb: *x\n",
        "a: !!str 1\n",
        "a: !!int '1'\n",
        "!!map\na: 1\n",
        "a: !t x\n",
        "&a a: 1\n",
        "a: &x\n  b: 1\n",
        "a: *x\n",
        // CRLF, tabs
        "a: 1\r\nb: 2\r\n",
        "a: |\r\n  x\r\n",
        "a: 1\rb: 2\n",
        "a:\tb\n",
        "a: b\tc\n",
        "a: b\t\n",
        "\ta: 1\n",
        "a:\n\t- b\n",
        "a: \"\tx\"\n",
        "a: 'x\t'\n",
        "a: |\n  \tx\n",
        // misc
        "a:",
        "a",
        "-",
        "- a\n- b\n",
        "just text\n",
        "a: b\nc",
        "a: 1\nb",
        "a: 1\n#",
        "a: 1\n  #c\n",
        "a: 1 # c\n  # d\nb: 2\n",
        "a:\n  # c\nb: 2\n",
        "a:\n  # c\n  b: 2\n",
        "a:\n# c\n  b: 2\n",
        "a: b # c\n\n  d\n",
        "a:\n  b: c # c\n\n   d\n",
        "a: b\n\n  c\n",
        "items:\n- a: 1\n- b: 2\n",
        "items:\n- {}\n- a: 1\n",
        "items:\n  - a: 1\n    b: 2\n  -\n    c: 3\n",
        "items:\n- a: 1\nitems:\n- b: 2\n",
        "items:\n- a\nitems:\n- b: 2\n",
        "items: [{a: 1}, {b: 2}]\n",
        "items: [{a: 1},\n {b: 2}]\n",
        "items:\n- a: 1\n  a: 2\n- b: 2\n",
        "items:\n- # c\n  a: 1\n",
        "items:\n-\n  # c\n\n  a: 1\n",
        "items:\n- a: 1\n---\nitems:\n- b: 1\n",
        "x:\n  items:\n  - 1\n",
        "a: 1\nitems:\n  - z: 1\n  - y:\n      items: [1]\n",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // Long keys and lines.
    for n in [1000, 1020, 1021, 1022, 1023, 1024, 1025, 1026, 1030, 2000] {
        let k = "k".repeat(n);
        v.push(format!("{k}: 1\n"));
        v.push(format!("a:\n  {k}: 1\n"));
        v.push(format!("a:\n- {k}: 1\n"));
        v.push(format!("\"{k}\": 1\n"));
        v.push(format!("'{k}': 1\n"));
        v.push(format!("a: {{{k}: 1}}\n"));
        v.push(format!("a: {k}\n"));
        let e = "é".repeat(n);
        v.push(format!("{e}: 1\n"));
        let s = "a b".repeat(n / 3 + 1);
        v.push(format!("{s}: 1\n"));
    }
    v.push(format!("a: {}\n", "x".repeat(100_000)));
    v.push(format!("a: \"{}\"\n", "x".repeat(100_000)));
    // Deep nesting.
    for d in [50, 200, 255, 256, 257, 300, 1000] {
        let mut t = String::new();
        for i in 0..d {
            t.push_str(&" ".repeat(i));
            t.push_str("a:\n");
        }
        t.push_str(&" ".repeat(d));
        t.push_str("b: 1\n");
        v.push(t);
        v.push(format!("a: {}{}\n", "[".repeat(d), "]".repeat(d)));
        let mut t = String::from("a:\n");
        for i in 0..d {
            t.push_str(&" ".repeat(i * 2));
            t.push_str("- \n");
        }
        v.push(t);
        let mut t = String::from("a:\n");
        for i in 0..d {
            t.push_str(&" ".repeat(i * 2));
            t.push_str("- k:\n");
        }
        v.push(t);
    }
    // Literal blocks indented past saphyr's 128-character lookahead.
    for n in [120, 125, 126, 127, 128, 129, 130, 200] {
        let p = " ".repeat(n);
        let q = " ".repeat(n - 2);
        let r = " ".repeat(n + 1);
        v.push(format!("a: |\n{p}x\n{p}y\n\n{q}\n{p}\n{p}z\nb: 1\n"));
        v.push(format!("a: |-\n{p}x\n{r}y\n{q}\nb: 1\n"));
        v.push(format!("a: |\n{p}x\n{q}"));
        v.push(format!("a: |\n{p}x\n{p}"));
        v.push(format!("a: |\n{p}x\n\n"));
        v.push(format!("a: |\n{p}x\n{q}# c\nb: 1\n"));
        v.push(format!("{q}a: |\n{p}x\n{q}b: 1\n"));
        v.push(format!("{q}a: |\n{q}x\n"));
        v.push(format!("{q}a:\n{q}- |\n{p}x\n{q}- y\n"));
    }
    // Indentation by 1 and 3.
    v.push("a:\n b:\n  c: 1\n d:\n - x\n - y: 1\n   z: 2\n".into());
    v.push("a:\n   b:\n      c: 1\n   d:\n   - x\n   -  y: 1\n      z: 2\n".into());
    v
}

#[test]
fn tricky_inputs_agree_with_saphyr() {
    let inputs = cases();
    let (out, accepted) = run(&inputs);
    assert!(out.is_empty(), "{}", out.join("\n"));
    // Else the comparison says little.
    assert!(accepted > 300, "{accepted}");
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const TOKENS: &[&str] = &[
    " ",
    "  ",
    "\n",
    "\n  ",
    "\n    ",
    "- ",
    "-",
    ": ",
    ":",
    "#",
    " #",
    "'",
    "''",
    "\"",
    "\\",
    "\\\"",
    "\\n",
    "\\u00e9",
    "{",
    "}",
    "[",
    "]",
    ",",
    ", ",
    "|",
    "|-",
    "|+",
    ">",
    "?",
    "? ",
    "&a ",
    "*a",
    "!",
    "!!str ",
    "%",
    "@",
    "`",
    "---",
    "...",
    "\n---\n",
    "~",
    "null",
    "yes",
    "0x1F",
    "012",
    "1e3",
    ".inf",
    "<<",
    "items",
    "a",
    "b",
    "x",
    "é",
    "😀",
    "\u{a0}",
    "\t",
    "\r",
    "\r\n",
    "http://x:80/y",
    "a b",
    " -",
    " - ",
    "- -",
    "-]",
    " -]",
    "-,",
    "a: b",
    "k:",
    "\n- k: v",
    "\n  k2: v2",
    "{a: [1, {b: c}]}",
    "[]",
    "{}",
    "'a''b'",
    "\"a\\\"b\"",
    "0",
    "1",
    "-1",
    "+1",
    ".5",
    "\u{feff}",
    "\u{85}",
    "\u{2028}",
];

fn mutate(rng: &mut Rng, text: &str) -> String {
    let mut t: Vec<char> = text.chars().collect();
    for _ in 0..1 + rng.below(3) {
        let at = if t.is_empty() {
            0
        } else {
            rng.below(t.len() + 1)
        };
        match rng.below(6) {
            0 | 1 => {
                let tok = TOKENS[rng.below(TOKENS.len())];
                for (k, c) in tok.chars().enumerate() {
                    t.insert(at + k, c);
                }
            }
            2 => {
                let n = 1 + rng.below(4);
                let end = (at + n).min(t.len());
                t.drain(at..end);
            }
            3 => {
                if at < t.len() {
                    t[at] = TOKENS[rng.below(TOKENS.len())]
                        .chars()
                        .next()
                        .unwrap_or(' ');
                }
            }
            4 => {
                // Re-indent a line by +-1.
                let s: String = t.iter().collect();
                let lines: Vec<&str> = s.split('\n').collect();
                let li = rng.below(lines.len());
                let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
                if rng.below(2) == 0 {
                    out[li].insert(0, ' ');
                } else if out[li].starts_with(' ') {
                    out[li].remove(0);
                }
                t = out.join("\n").chars().collect();
            }
            _ => {
                // Duplicate or drop a line.
                let s: String = t.iter().collect();
                let mut lines: Vec<String> = s.split('\n').map(|l| l.to_string()).collect();
                let li = rng.below(lines.len());
                if rng.below(2) == 0 {
                    let l = lines[li].clone();
                    lines.insert(li, l);
                } else if lines.len() > 1 {
                    lines.remove(li);
                }
                t = lines.join("\n").chars().collect();
            }
        }
    }
    t.into_iter().collect()
}

/// Random edits (tokens inserted, bytes dropped, lines re-indented,
/// doubled or dropped) of the inputs above and of the test manifests.
/// `FUZZ_ITERS` and `FUZZ_SEED` run it longer or elsewhere.
#[test]
fn mutated_inputs_agree_with_saphyr() {
    let iters: usize = std::env::var("FUZZ_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4000);
    let seed: u64 = std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x9e37_79b9_7f4a_7c15);
    let mut seeds: Vec<String> = cases()
        .into_iter()
        .filter(|s| s.len() < 3000 && read(s).is_some())
        .collect();
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/manifests");
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(text) = std::fs::read_to_string(&p)
                && text.len() < 4000
                && read(&text).is_some()
            {
                seeds.push(text);
            }
        }
    }
    let mut rng = Rng(seed);
    let mut found = std::collections::BTreeSet::new();
    let mut accepted = 0;
    for _ in 0..iters {
        let base = &seeds[rng.below(seeds.len())];
        let t = mutate(&mut rng, base);
        if let Some(m) = check(&t) {
            if found.len() < 20 {
                eprintln!("{m}");
            }
            found.insert(t.clone());
        } else if read(&t).is_some() {
            accepted += 1;
            if seeds.len() < 20_000 && rng.below(20) == 0 {
                seeds.push(t);
            }
        }
    }
    assert!(found.is_empty(), "{} divergent inputs", found.len());
    assert!(accepted > iters / 4, "{accepted}");
}
