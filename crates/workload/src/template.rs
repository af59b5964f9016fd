//! Request templates: `{{...}}` placeholders in URLs, header values and bodies, split once into
//! literal and placeholder parts when the plan is loaded, then rendered per request into a
//! buffer the connection reuses. No general template engine runs on the hot path: rendering is
//! a loop over parts that appends bytes.
//!
//! Placeholders:
//!
//! | text                   | value                                                          |
//! |------------------------|----------------------------------------------------------------|
//! | `{{seq}}`              | global request number, 0, 1, 2, ... unique across all workers  |
//! | `{{vu}}`               | the virtual user (connection slot) number                      |
//! | `{{uuid}}`             | a random version-4 UUID                                        |
//! | `{{rand_int A B}}`     | a random integer in A..=B                                      |
//! | `{{rand_str N}}`       | N random letters and digits                                    |
//! | `{{now_ms}}`           | Unix time in milliseconds                                      |
//! | `{{env NAME}}`         | environment variable NAME, read once when the plan is loaded   |
//! | `{{data.SET.COLUMN}}`  | COLUMN of the current row of data set SET (a CSV file)         |
//! | `{{NAME}}`             | a variable extracted by an earlier step of a flow              |
//!
//! Random values come from the virtual user's own generator, seeded from `--seed`, so a run
//! with the same seed renders the same values on the same virtual user.

use model::Counter;
use stats::rng::Rng;
use std::io::Write;

/// A data set: CSV rows handed out in order (wrapping around at the end).
#[derive(Debug)]
pub struct Table {
    pub name: String,
    pub columns: Vec<String>,
    pub rows: crate::Cells,
    /// One fixed row per virtual user instead of the next row per iteration.
    pub per_vu: bool,
    next: Counter,
}

impl Table {
    pub fn new(
        name: String,
        columns: Vec<String>,
        rows: impl Into<crate::Cells>,
        per_vu: bool,
    ) -> Table {
        Table {
            name,
            columns,
            rows: rows.into(),
            per_vu,
            next: Counter::new(0),
        }
    }

    /// Takes only `part`'s rows in turn (a distributed run's worker).
    pub fn set_part(&mut self, part: model::Part) {
        self.next.set_part(part);
    }

    pub(crate) fn row_for(&self, vu: u64) -> usize {
        let n = self.rows.rows().max(1) as u64;
        let i = if self.per_vu { vu } else { self.next.take() };
        (i % n) as usize
    }
}

/// One piece of a compiled template.
#[derive(Clone, Debug, PartialEq)]
enum Part {
    Lit(Vec<u8>),
    Seq,
    Vu,
    Uuid,
    RandInt(i64, i64),
    RandStr(usize),
    NowMs,
    /// (data set index, column index)
    Data(usize, usize),
    /// Flow variable index.
    Var(usize),
    /// `{{words N}}`: N words, each one token to common tokenizers (a synthetic prompt).
    Words(usize),
    /// A placeholder whose value goes into a JSON string, escaped ([`Template::json_string`]).
    Escaped(Box<Part>),
}

/// A compiled template.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Template {
    parts: Vec<Part>,
}

/// Names a template may refer to, known when it is compiled.
pub struct Names<'a> {
    /// Data sets: (name, columns).
    pub data: &'a [(String, Vec<String>)],
    /// Flow variables, by index.
    pub vars: &'a [String],
    /// Looks up an environment variable (`std::env::var` in production).
    pub env: &'a dyn Fn(&str) -> Option<String>,
}

/// Why a template does not compile; `at` is the byte offset of the placeholder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    pub at: usize,
    pub message: String,
}

/// Per-request values a render reads: the request number, the virtual user, its generator,
/// its variables, and its current data rows.
pub struct Scope<'a> {
    pub seq: &'a Counter,
    /// This request's `{{seq}}`, taken on first use so every `{{seq}}` in one request agrees.
    pub seq_value: Option<u64>,
    pub vu: u64,
    pub rng: &'a mut Rng,
    pub vars: &'a [Option<String>],
    pub tables: &'a [Table],
    /// Per data set: the current row.
    pub rows: &'a [usize],
}

impl Template {
    /// Splits `text` into parts, checking every placeholder name and argument.
    pub fn compile(text: &str, names: &Names) -> Result<Template, TemplateError> {
        let mut parts = Vec::new();
        let mut rest = text;
        let mut offset = 0;
        while let Some(open) = rest.find("{{") {
            if open > 0 {
                parts.push(Part::Lit(rest.as_bytes()[..open].to_vec()));
            }
            let at = offset + open;
            let close = rest[open..].find("}}").ok_or_else(|| TemplateError {
                at,
                message: "unclosed '{{' (expected '}}')".into(),
            })?;
            let inner = rest[open + 2..open + close].trim();
            parts.push(placeholder(inner, names).map_err(|message| TemplateError { at, message })?);
            offset += open + close + 2;
            rest = &rest[open + close + 2..];
        }
        if !rest.is_empty() {
            parts.push(Part::Lit(rest.as_bytes().to_vec()));
        }
        // Environment values became literals: merge neighbouring literals.
        let mut merged: Vec<Part> = Vec::with_capacity(parts.len());
        for p in parts {
            match (merged.last_mut(), p) {
                (Some(Part::Lit(a)), Part::Lit(b)) => a.extend_from_slice(&b),
                (_, p) => merged.push(p),
            }
        }
        Ok(Template { parts: merged })
    }

    /// A template that is just `text`.
    pub fn literal(text: &[u8]) -> Template {
        Template {
            parts: if text.is_empty() {
                Vec::new()
            } else {
                vec![Part::Lit(text.to_vec())]
            },
        }
    }

    /// Appends `other`'s parts (a path prefix followed by the request's own path).
    pub fn append(&mut self, other: Template) {
        for p in other.parts {
            match (self.parts.last_mut(), p) {
                (Some(Part::Lit(a)), Part::Lit(b)) => a.extend_from_slice(&b),
                (_, p) => self.parts.push(p),
            }
        }
    }

    /// The most bytes one rendering can give: literals, each function's longest value, the
    /// widest cell of each data column read (`widest(set, column)`), and `var_most` for a
    /// flow variable.
    pub fn most_bytes(&self, widest: &dyn Fn(usize, usize) -> usize, var_most: usize) -> u64 {
        self.parts
            .iter()
            .map(|p| part_most(p, widest, var_most) as u64)
            .sum()
    }

    /// This template as the inside of a JSON string: its literals escaped now, each
    /// placeholder's value escaped as it is rendered (a prompt from a data file with quotes
    /// and newlines in it still makes valid JSON).
    pub fn json_string(self) -> Template {
        let parts = self
            .parts
            .into_iter()
            .map(|p| match p {
                Part::Lit(b) => {
                    let mut out = Vec::with_capacity(b.len());
                    push_json_escaped(&mut out, &b);
                    Part::Lit(out)
                }
                p => Part::Escaped(Box::new(p)),
            })
            .collect();
        Template { parts }
    }

    /// True when it renders nothing at all (no text was given).
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// True when rendering always gives the same bytes.
    pub fn is_static(&self) -> bool {
        self.parts.iter().all(|p| matches!(p, Part::Lit(_)))
    }

    /// The literal text of a static template.
    pub fn static_bytes(&self) -> Option<Vec<u8>> {
        self.is_static()
            .then(|| self.parts.iter().flat_map(lit).copied().collect())
    }

    /// The literal pieces (text written in the plan, and `{{env}}` values).
    pub fn literals(&self) -> impl Iterator<Item = &[u8]> {
        self.parts.iter().filter_map(|p| match p {
            Part::Lit(b) => Some(b.as_slice()),
            _ => None,
        })
    }

    /// Whether any part reads data set `set`.
    pub fn uses_data(&self, set: usize) -> bool {
        self.parts.iter().any(|p| match p {
            Part::Escaped(p) => matches!(**p, Part::Data(s, _) if s == set),
            p => matches!(p, Part::Data(s, _) if *s == set),
        })
    }

    /// Appends the rendered template to `out`.
    pub fn render(&self, scope: &mut Scope, out: &mut Vec<u8>) {
        for p in &self.parts {
            render_part(p, scope, out);
        }
    }
}

fn render_part(p: &Part, scope: &mut Scope, out: &mut Vec<u8>) {
    match p {
        Part::Lit(b) => out.extend_from_slice(b),
        Part::Seq => {
            let n = *scope.seq_value.get_or_insert_with(|| scope.seq.take());
            push_int(out, n as i64);
        }
        Part::Vu => push_int(out, scope.vu as i64),
        Part::Uuid => push_uuid(out, scope.rng),
        Part::RandInt(a, b) => push_int(out, scope.rng.range_i64(*a, *b)),
        Part::RandStr(n) => {
            const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
            for _ in 0..*n {
                out.push(ALNUM[scope.rng.below(ALNUM.len() as u64) as usize]);
            }
        }
        Part::NowMs => {
            let ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64);
            push_int(out, ms);
        }
        Part::Data(set, col) => {
            let cell = scope
                .rows
                .get(*set)
                .and_then(|&r| scope.tables.get(*set)?.rows.get(r, *col));
            if let Some(cell) = cell {
                out.extend_from_slice(cell);
            }
        }
        Part::Var(i) => {
            if let Some(Some(v)) = scope.vars.get(*i) {
                out.extend_from_slice(v.as_bytes());
            }
        }
        Part::Words(n) => {
            for i in 0..*n {
                if i > 0 {
                    out.push(b' ');
                }
                let w = WORDS[scope.rng.below(WORDS.len() as u64) as usize];
                out.extend_from_slice(w.as_bytes());
            }
        }
        Part::Escaped(p) => {
            let start = out.len();
            render_part(p, scope, out);
            let raw = out.split_off(start);
            push_json_escaped(out, &raw);
        }
    }
}

fn part_most(p: &Part, widest: &dyn Fn(usize, usize) -> usize, var_most: usize) -> usize {
    match p {
        Part::Lit(b) => b.len(),
        Part::Seq | Part::Vu | Part::RandInt(..) | Part::NowMs => 20,
        Part::Uuid => 36,
        Part::RandStr(n) => *n,
        Part::Data(set, col) => widest(*set, *col),
        Part::Var(_) => var_most,
        Part::Words(n) => n * (LONGEST_WORD + 1),
        // `\u001f` for every byte at worst.
        Part::Escaped(p) => 6 * part_most(p, widest, var_most),
    }
}

/// Words that common tokenizers (GPT's, Llama's) read as one token each, after a space:
/// `{{words N}}` draws from them, so N words are about N prompt tokens and no two prompts
/// share a long prefix a server could cache.
const WORDS: [&str; 64] = [
    "the",
    "time",
    "people",
    "way",
    "day",
    "man",
    "thing",
    "woman",
    "life",
    "child",
    "world",
    "school",
    "state",
    "family",
    "student",
    "group",
    "country",
    "problem",
    "hand",
    "part",
    "place",
    "case",
    "week",
    "company",
    "system",
    "program",
    "question",
    "work",
    "government",
    "number",
    "night",
    "point",
    "home",
    "water",
    "room",
    "mother",
    "area",
    "money",
    "story",
    "fact",
    "month",
    "lot",
    "right",
    "study",
    "book",
    "eye",
    "job",
    "word",
    "business",
    "issue",
    "side",
    "kind",
    "head",
    "house",
    "service",
    "friend",
    "father",
    "power",
    "hour",
    "game",
    "line",
    "end",
    "member",
    "law",
];
const LONGEST_WORD: usize = 10;

/// `raw` as the inside of a JSON string (RFC 8259): quotes, backslashes and control bytes
/// escaped; other bytes (UTF-8 included) as they are.
fn push_json_escaped(out: &mut Vec<u8>, raw: &[u8]) {
    for &b in raw {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0..=0x1f => {
                let _ = write!(out, "\\u{b:04x}");
            }
            _ => out.push(b),
        }
    }
}

fn lit(p: &Part) -> &[u8] {
    match p {
        Part::Lit(b) => b,
        _ => &[],
    }
}

fn push_int(out: &mut Vec<u8>, n: i64) {
    let _ = write!(out, "{n}");
}

fn push_uuid(out: &mut Vec<u8>, rng: &mut Rng) {
    let (hi, lo) = (rng.next_u64(), rng.next_u64());
    // Version 4 and the RFC 4122 variant bits.
    let hi = (hi & !0xF000) | 0x4000;
    let lo = (lo & !(0xC << 60)) | (0x8 << 60);
    let _ = write!(
        out,
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xFFFF,
        hi & 0xFFFF,
        lo >> 48,
        lo & 0xFFFF_FFFF_FFFF
    );
}

const FUNCTIONS: [&str; 8] = [
    "seq", "vu", "uuid", "rand_int", "rand_str", "now_ms", "env", "words",
];

/// The most words `{{words N}}` gives: a prompt of about that many tokens.
const MOST_WORDS: usize = 1 << 20;

fn placeholder(inner: &str, names: &Names) -> Result<Part, String> {
    let mut words = inner.split_whitespace();
    let head = words.next().ok_or("empty placeholder '{{}}'")?;
    let args: Vec<&str> = words.collect();
    let arity = |n: usize, usage: &str| {
        if args.len() == n {
            Ok(())
        } else {
            Err(format!("'{{{{{inner}}}}}': expected {{{{{usage}}}}}"))
        }
    };
    match head {
        "seq" | "vu" | "uuid" | "now_ms" => {
            arity(0, head)?;
            Ok(match head {
                "seq" => Part::Seq,
                "vu" => Part::Vu,
                "uuid" => Part::Uuid,
                _ => Part::NowMs,
            })
        }
        "rand_int" => {
            arity(2, "rand_int MIN MAX")?;
            let n = |s: &str| {
                s.parse::<i64>()
                    .map_err(|_| format!("rand_int: '{s}' is not an integer"))
            };
            let (a, b) = (n(args[0])?, n(args[1])?);
            if a > b {
                return Err(format!("rand_int: MIN {a} is greater than MAX {b}"));
            }
            Ok(Part::RandInt(a, b))
        }
        "rand_str" => {
            arity(1, "rand_str LENGTH")?;
            match args[0].parse::<usize>() {
                Ok(n) if (1..=4096).contains(&n) => Ok(Part::RandStr(n)),
                _ => Err(format!(
                    "rand_str: '{}' is not a length in 1..=4096",
                    args[0]
                )),
            }
        }
        "words" => {
            arity(1, "words COUNT")?;
            match args[0].parse::<usize>() {
                Ok(n) if (1..=MOST_WORDS).contains(&n) => Ok(Part::Words(n)),
                _ => Err(format!(
                    "words: '{}' is not a count in 1..={MOST_WORDS}",
                    args[0]
                )),
            }
        }
        "env" => {
            arity(1, "env NAME")?;
            (names.env)(args[0])
                .map(|v| Part::Lit(v.into_bytes()))
                .ok_or_else(|| format!("environment variable '{}' is not set", args[0]))
        }
        _ if !args.is_empty() => Err(format!(
            "unknown template function '{head}'{}",
            did_you_mean(head, FUNCTIONS.iter().copied())
        )),
        _ => name(head, names),
    }
}

fn name(head: &str, names: &Names) -> Result<Part, String> {
    if let Some(path) = head.strip_prefix("data.") {
        let (set, col) = path
            .split_once('.')
            .ok_or_else(|| format!("'{head}': expected data.SET.COLUMN"))?;
        let s = names
            .data
            .iter()
            .position(|(n, _)| n == set)
            .ok_or_else(|| {
                format!(
                    "unknown data set '{set}'{}",
                    did_you_mean(set, names.data.iter().map(|(n, _)| n.as_str()))
                )
            })?;
        let cols = &names.data[s].1;
        let c = cols.iter().position(|c| c == col).ok_or_else(|| {
            format!(
                "data set '{set}' has no column '{col}' (columns: {})",
                cols.join(", ")
            )
        })?;
        return Ok(Part::Data(s, c));
    }
    if let Some(i) = names.vars.iter().position(|v| v == head) {
        return Ok(Part::Var(i));
    }
    let known = FUNCTIONS
        .iter()
        .copied()
        .chain(names.vars.iter().map(String::as_str));
    Err(format!(
        "unknown template name '{head}'{}",
        did_you_mean(head, known)
    ))
}

/// ` (did you mean 'x'?)` when one of `known` is close to `word`, else empty.
pub fn did_you_mean<'a>(word: &str, known: impl Iterator<Item = &'a str>) -> String {
    known
        .map(|k| (edit_distance(word, k), k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 3))
        .min()
        .map_or(String::new(), |(_, k)| format!(" (did you mean '{k}'?)"))
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names<'a>(data: &'a [(String, Vec<String>)], vars: &'a [String]) -> Names<'a> {
        Names {
            data,
            vars,
            env: &|k| (k == "HOME_TEAM").then(|| "reds".to_string()),
        }
    }

    fn render(t: &Template, seq: &Counter, rng: &mut Rng, vars: &[Option<String>]) -> String {
        let tables = [Table::new(
            "users".into(),
            vec!["email".into(), "password".into()],
            vec![vec!["ann@example.test".into(), "pw".into()]],
            false,
        )];
        let mut scope = Scope {
            seq,
            seq_value: None,
            vu: 7,
            rng,
            vars,
            tables: &tables,
            rows: &[0],
        };
        let mut out = Vec::new();
        t.render(&mut scope, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn words_are_drawn_anew_for_each_request() {
        let t = Template::compile("{{words 40}}", &names(&[], &[])).unwrap();
        let (seq, mut rng) = (Counter::new(0), Rng::new(3));
        let a = render(&t, &seq, &mut rng, &[]);
        let b = render(&t, &seq, &mut rng, &[]);
        assert_eq!(a.split(' ').count(), 40, "{a}");
        assert!(a.split(' ').all(|w| WORDS.contains(&w)), "{a}");
        assert_ne!(a, b, "two prompts share no long prefix");
        assert!(t.most_bytes(&|_, _| 0, 0) >= a.len() as u64);
        for bad in [
            "{{words 0}}",
            "{{words}}",
            "{{words many}}",
            "{{words 2000000}}",
        ] {
            let e = Template::compile(bad, &names(&[], &[])).unwrap_err();
            assert!(e.message.contains("words"), "{bad}: {}", e.message);
        }
    }

    #[test]
    fn a_json_string_template_escapes_what_it_renders() {
        let data = [("users".to_string(), vec!["email".to_string()])];
        let vars = ["q".to_string()];
        let t = Template::compile(
            "say \"{{q}}\"\n to {{data.users.email}}",
            &names(&data, &vars),
        )
        .unwrap()
        .json_string();
        let hostile = "a\"b\\c\n\u{1}é";
        let (seq, mut rng) = (Counter::new(0), Rng::new(1));
        let got = render(&t, &seq, &mut rng, &[Some(hostile.into())]);
        let back: String = serde_json::from_str(&format!("\"{got}\"")).unwrap();
        assert_eq!(back, format!("say \"{hostile}\"\n to ann@example.test"));
        assert!(
            t.uses_data(0),
            "an escaped placeholder still reads its data set"
        );
        assert!(t.most_bytes(&|_, _| 16, 10) >= got.len() as u64);
    }

    #[test]
    fn renders_every_placeholder() {
        let data = [(
            "users".to_string(),
            vec!["email".to_string(), "password".to_string()],
        )];
        let vars = ["token".to_string()];
        let t = Template::compile(
            "/u/{{seq}}/{{ seq }}?vu={{vu}}&n={{rand_int 3 3}}&s={{rand_str 5}}&t={{env HOME_TEAM}}&e={{data.users.email}}&k={{token}}&id={{uuid}}",
            &names(&data, &vars),
        )
        .unwrap();
        let seq = Counter::new(41);
        let mut rng = Rng::new(1);
        let got = render(&t, &seq, &mut rng, &[Some("abc".into())]);
        let (fixed, uuid) = got.split_once("&id=").unwrap();
        assert!(fixed.starts_with("/u/41/41?vu=7&n=3&s="), "{got}");
        assert!(fixed.ends_with("&t=reds&e=ann@example.test&k=abc"), "{got}");
        assert_eq!(seq.take(), 42, "one seq per request");
        assert_eq!(uuid.len(), 36);
        assert_eq!(&uuid[14..15], "4", "version 4: {uuid}");
        assert!("89ab".contains(&uuid[19..20]), "variant: {uuid}");
        assert!(!t.is_static());
    }

    #[test]
    fn same_seed_same_values() {
        let t = Template::compile(
            "{{uuid}} {{rand_str 8}} {{rand_int 1 1000000}}",
            &names(&[], &[]),
        )
        .unwrap();
        let seq = Counter::new(0);
        let a = render(&t, &seq, &mut Rng::new(9), &[]);
        let b = render(&t, &seq, &mut Rng::new(9), &[]);
        let c = render(&t, &seq, &mut Rng::new(10), &[]);
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn static_templates_stay_literal() {
        let t = Template::compile("{\"team\":\"{{env HOME_TEAM}}\"}", &names(&[], &[])).unwrap();
        assert_eq!(t.static_bytes().unwrap(), b"{\"team\":\"reds\"}");
    }

    #[test]
    fn errors_point_at_the_placeholder() {
        let data = [("users".to_string(), vec!["email".to_string()])];
        let vars = ["token".to_string()];
        let n = names(&data, &vars);
        let cases = [
            (
                "/a/{{sqe}}",
                3,
                "unknown template name 'sqe' (did you mean 'seq'?)",
            ),
            ("x{{tokn}}", 1, "did you mean 'token'?"),
            ("{{rand_int 5 1}}", 0, "MIN 5 is greater than MAX 1"),
            ("{{rand_int 1}}", 0, "expected {{rand_int MIN MAX}}"),
            ("{{rand_str 0}}", 0, "not a length"),
            ("{{env NOPE_NOT_SET}}", 0, "'NOPE_NOT_SET' is not set"),
            (
                "{{data.user.email}}",
                0,
                "unknown data set 'user' (did you mean 'users'?)",
            ),
            (
                "{{data.users.mail}}",
                0,
                "has no column 'mail' (columns: email)",
            ),
            ("ab{{seq", 2, "unclosed"),
            (
                "{{rnd_int 1 2}}",
                0,
                "unknown template function 'rnd_int' (did you mean 'rand_int'?)",
            ),
        ];
        for (text, at, want) in cases {
            let e = Template::compile(text, &n).unwrap_err();
            assert!(e.message.contains(want), "{text}: {}", e.message);
            assert_eq!(e.at, at, "{text}");
        }
    }
}
