//! Drop the unwanted keys of the objects in one top-level array of a JSON document.
//!
//! `squeue --json` prints ~110 keys per job; a collector maps ~25. A typed decoder
//! that skips the other keys still compares each of them with every declared field,
//! which at 100k jobs costs more than reading the whole document. This pass keeps,
//! in every object element of one top-level array, only the listed keys (their
//! values copied byte for byte) and copies everything else as it is, so that the
//! decoder reads a document that has little beyond what it wants.
//!
//! Whatever the pruned document decodes to, the original decodes to the same: values
//! are never rewritten, a key that cannot be compared without unescaping is kept, and
//! input that is not JSON is refused (the caller then decodes the original, whose
//! decoder names the problem).

#[cfg(feature = "python")]
pub mod python;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PruneError {
    /// Byte offset of the problem in the input.
    pub at: usize,
    pub what: &'static str,
}

impl std::fmt::Display for PruneError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at byte {}", self.what, self.at)
    }
}

impl std::error::Error for PruneError {}

type Result<T> = std::result::Result<T, PruneError>;

/// Nesting deeper than this is refused rather than risking the stack.
const MAX_DEPTH: usize = 512;

/// The kept keys grouped by length: an unwanted key is compared with the few kept keys
/// of its own length only.
struct KeySet<'k> {
    by_len: Vec<Vec<&'k [u8]>>,
}

impl<'k> KeySet<'k> {
    fn new(keys: &[&'k [u8]]) -> Self {
        let longest = keys.iter().map(|k| k.len()).max().unwrap_or(0);
        let mut by_len = vec![Vec::new(); longest + 1];
        for k in keys {
            by_len[k.len()].push(*k);
        }
        KeySet { by_len }
    }

    #[inline]
    fn contains(&self, key: &[u8]) -> bool {
        // The first and last bytes tell most keys of one length apart without a memcmp call.
        let (Some(first), Some(last)) = (key.first(), key.last()) else {
            return self.by_len.first().is_some_and(|empty| !empty.is_empty());
        };
        self.by_len.get(key.len()).is_some_and(|same| {
            same.iter()
                .any(|k| k[0] == *first && k[k.len() - 1] == *last && *k == key)
        })
    }
}

/// Below this many bytes the document is pruned on one thread.
const SPLIT_FROM: usize = 4 << 20;

/// Keep only `keep` in each object element of the top-level member `member`.
///
/// Keys are compared as raw bytes; a key written with an escape is kept. Everything
/// outside that array, and each kept value, is copied unchanged; the whitespace
/// between the pruned objects' tokens is dropped.
///
/// A large document is pruned by two threads: the second starts at a guessed element
/// boundary in the second half, the first stops there only if it reaches that very
/// byte as the start of an element of the array; otherwise the first goes on alone
/// and the second's work is dropped. The result never depends on the guess.
pub fn prune(data: &[u8], member: &[u8], keep: &[&[u8]]) -> Result<Vec<u8>> {
    prune_parts(data, member, keep).map(|parts| parts.concat())
}

/// `prune`'s result in the pieces the threads wrote, to be joined by the caller where
/// the result is to live (the Python binding writes them straight into one bytes).
pub fn prune_parts(data: &[u8], member: &[u8], keep: &[&[u8]]) -> Result<Vec<Vec<u8>>> {
    let guess = (data.len() >= SPLIT_FROM)
        .then(|| element_guess(data))
        .flatten();
    prune_split_at(data, member, keep, guess)
}

fn prune_split_at(
    data: &[u8],
    member: &[u8],
    keep: &[&[u8]],
    guess: Option<usize>,
) -> Result<Vec<Vec<u8>>> {
    let keep = KeySet::new(keep);
    let Some(guess) = guess else {
        let mut whole = Pruner::new(data, 0, usize::MAX, &keep);
        whole.document(member)?;
        return Ok(vec![whole.out]);
    };
    std::thread::scope(|scope| {
        let second = scope.spawn(|| {
            let mut tail = Pruner::new(data, guess, usize::MAX, &keep);
            tail.array_items()?;
            if tail.next_member()? {
                tail.members(member)?;
            } else {
                tail.end_document()?;
            }
            Ok(tail.out)
        });
        let mut head = Pruner::new(data, 0, guess, &keep);
        let head_result = head.document(member);
        let tail_result = second
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        head_result?;
        if !head.stopped {
            return Ok(vec![head.out]);
        }
        Ok(vec![head.out, tail_result?])
    })
}

/// The first `{` after the middle that follows `}` `,` (with whitespace between): in
/// an array of objects, most likely the start of an element.
fn element_guess(data: &[u8]) -> Option<usize> {
    let mut at = data.len() / 2;
    while let Some(off) = data[at..].iter().position(|&c| c == b'}') {
        let mut j = at + off + 1;
        let skip = |j: &mut usize| {
            while matches!(data.get(*j), Some(b' ' | b'\n' | b'\r' | b'\t')) {
                *j += 1;
            }
        };
        skip(&mut j);
        if data.get(j) == Some(&b',') {
            j += 1;
            skip(&mut j);
            if data.get(j) == Some(&b'{') {
                return Some(j);
            }
        }
        at += off + 1;
    }
    None
}

struct Pruner<'a, 'k> {
    b: &'a [u8],
    i: usize,
    out: Vec<u8>,
    keep: &'k KeySet<'k>,
    /// Stop when an element of the pruned array starts here (another thread does the rest).
    stop_at: usize,
    stopped: bool,
}

impl<'a, 'k> Pruner<'a, 'k> {
    fn new(b: &'a [u8], i: usize, stop_at: usize, keep: &'k KeySet<'k>) -> Self {
        let share = stop_at.min(b.len()).saturating_sub(i);
        Pruner {
            b,
            i,
            out: Vec::with_capacity(share / 8),
            keep,
            stop_at,
            stopped: false,
        }
    }

    #[cold]
    #[inline(never)]
    fn fail<T>(&self, what: &'static str) -> Result<T> {
        let what = if self.i >= self.b.len() {
            "document ends early"
        } else {
            what
        };
        Err(PruneError { at: self.i, what })
    }

    #[inline(always)]
    fn ws(&mut self) {
        let b = self.b;
        let mut i = self.i;
        // Most calls find a token right away (after a key, before a comma).
        if b.get(i).is_none_or(|&c| c > b' ') {
            return;
        }
        loop {
            // Eight bytes a step: pretty-printed output indents every line.
            if let Some(chunk) = b.get(i..i + 8) {
                let x = u64::from_le_bytes(chunk.try_into().expect("eight bytes")) ^ (LOW * 0x20);
                if x == 0 {
                    i += 8;
                    continue;
                }
                i += (x.trailing_zeros() / 8) as usize;
            } else {
                while b.get(i) == Some(&b' ') {
                    i += 1;
                }
            }
            match b.get(i) {
                Some(b'\n' | b'\r' | b'\t') => i += 1,
                _ => break,
            }
        }
        self.i = i;
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn expect(&mut self, c: u8, what: &'static str) -> Result<()> {
        if self.peek() != Some(c) {
            return self.fail(what);
        }
        self.i += 1;
        Ok(())
    }

    /// At an opened object or array: true, past `close`, when it is empty.
    #[inline(always)]
    fn closes_at_once(&mut self, close: u8) -> bool {
        self.ws();
        if self.peek() == Some(close) {
            self.i += 1;
            return true;
        }
        false
    }

    /// A member's key and its `:`: the key's raw bytes and whether it has an escape.
    #[inline(always)]
    fn key(&mut self) -> Result<(&'a [u8], bool)> {
        self.ws();
        let key = self.string()?;
        self.ws();
        self.expect(b':', "expected ':'")?;
        self.ws();
        Ok(key)
    }

    /// After a member or element: true past a `,` (another follows), false past `close`.
    #[inline(always)]
    fn separator(&mut self, close: u8) -> Result<bool> {
        self.ws();
        match self.peek() {
            Some(b',') => {
                self.i += 1;
                Ok(true)
            }
            Some(c) if c == close => {
                self.i += 1;
                Ok(false)
            }
            _ => self.fail_separator(close),
        }
    }

    #[cold]
    #[inline(never)]
    fn fail_separator<T>(&self, close: u8) -> Result<T> {
        self.fail(if close == b'}' {
            "expected ',' or '}'"
        } else {
            "expected ',' or ']'"
        })
    }

    fn document(&mut self, member: &[u8]) -> Result<()> {
        self.ws();
        self.expect(b'{', "expected an object")?;
        self.out.push(b'{');
        if self.closes_at_once(b'}') {
            return self.end_document();
        }
        self.members(member)
    }

    fn members(&mut self, member: &[u8]) -> Result<()> {
        loop {
            let (key, _) = self.key()?;
            self.out.push(b'"');
            self.out.extend_from_slice(key);
            self.out.extend_from_slice(b"\":");
            if key == member && self.peek() == Some(b'[') {
                self.i += 1;
                self.out.push(b'[');
                self.array_items()?;
                if self.stopped {
                    return Ok(());
                }
            } else {
                self.copied_value()?;
            }
            if !self.next_member()? {
                return self.end_document();
            }
        }
    }

    /// After a top-level member: true at `,` (another member follows), false at `}`.
    fn next_member(&mut self) -> Result<bool> {
        let more = self.separator(b'}')?;
        if more {
            self.out.push(b',');
        }
        Ok(more)
    }

    fn end_document(&mut self) -> Result<()> {
        self.out.push(b'}');
        self.ws();
        if self.i != self.b.len() {
            return self.fail("data after the document");
        }
        Ok(())
    }

    /// The elements of the pruned array and its `]`, from just after `[` or `,`.
    fn array_items(&mut self) -> Result<()> {
        if self.closes_at_once(b']') {
            self.out.push(b']');
            return Ok(());
        }
        loop {
            self.ws();
            if self.i == self.stop_at {
                self.stopped = true;
                return Ok(());
            }
            if self.peek() == Some(b'{') {
                self.pruned_object()?;
            } else {
                self.copied_value()?;
            }
            if !self.separator(b']')? {
                break;
            }
            self.out.push(b',');
        }
        self.out.push(b']');
        Ok(())
    }

    fn pruned_object(&mut self) -> Result<()> {
        self.i += 1; // '{'
        self.out.push(b'{');
        let mut first = true;
        if self.closes_at_once(b'}') {
            self.out.push(b'}');
            return Ok(());
        }
        loop {
            let (key, escaped) = self.key()?;
            let start = self.i;
            self.any_value(1)?;
            if escaped || self.keep.contains(key) {
                if !first {
                    self.out.push(b',');
                }
                first = false;
                self.out.push(b'"');
                self.out.extend_from_slice(key);
                self.out.extend_from_slice(b"\":");
                self.out.extend_from_slice(&self.b[start..self.i]);
            }
            // Spelled out rather than `separator`: once per key of every job, and
            // the call's bool costs this loop 5% more instructions.
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    break;
                }
                _ => return self.fail_separator(b'}'),
            }
        }
        self.out.push(b'}');
        Ok(())
    }

    fn copied_value(&mut self) -> Result<()> {
        let start = self.i;
        self.any_value(0)?;
        self.out.extend_from_slice(&self.b[start..self.i]);
        Ok(())
    }

    /// `value`, with strings and numbers (most values) read without a call.
    #[inline(always)]
    fn any_value(&mut self, depth: usize) -> Result<()> {
        match self.peek() {
            Some(b'"') => self.string().map(|_| ()),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => self.value(depth),
        }
    }

    /// Skip one value, checking it is JSON.
    fn value(&mut self, depth: usize) -> Result<()> {
        if depth > MAX_DEPTH {
            return self.fail("nested too deeply");
        }
        match self.peek() {
            Some(b'"') => self.string().map(|_| ()),
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => self.fail("expected a value"),
            None => self.fail("document ends early"),
        }
    }

    fn object(&mut self, depth: usize) -> Result<()> {
        self.i += 1;
        if self.closes_at_once(b'}') {
            return Ok(());
        }
        loop {
            self.key()?;
            self.any_value(depth + 1)?;
            if !self.separator(b'}')? {
                return Ok(());
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<()> {
        self.i += 1;
        if self.closes_at_once(b']') {
            return Ok(());
        }
        loop {
            self.ws();
            self.any_value(depth + 1)?;
            if !self.separator(b']')? {
                return Ok(());
            }
        }
    }

    fn literal(&mut self, word: &'static [u8]) -> Result<()> {
        if self.b[self.i..].starts_with(word) {
            self.i += word.len();
            Ok(())
        } else {
            self.fail("bad literal")
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        // Eight bytes a step (epoch times have ten digits): a byte is a digit when its
        // high nibble is 3 both as it is and with 6 added.
        while let Some(chunk) = self.b.get(self.i..self.i + 8) {
            let w = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
            let other = ((w & (LOW * 0xf0)) ^ (LOW * 0x30))
                | ((w.wrapping_add(LOW * 0x06) & (LOW * 0xf0)) ^ (LOW * 0x30));
            if other != 0 {
                self.i += (other.trailing_zeros() / 8) as usize;
                return self.i - start;
            }
            self.i += 8;
        }
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        self.i - start
    }

    #[inline]
    fn number(&mut self) -> Result<()> {
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek() {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return self.fail("bad number"),
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return self.fail("bad number");
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if self.digits() == 0 {
                return self.fail("bad number");
            }
        }
        Ok(())
    }

    /// A string at `self.i`: its raw content (escapes left as written) and whether it
    /// has any escape.
    #[inline(always)]
    fn string(&mut self) -> Result<(&'a [u8], bool)> {
        if self.peek() != Some(b'"') {
            return self.fail("expected a string");
        }
        self.i += 1;
        let start = self.i;
        let mut escaped = false;
        loop {
            self.i += special_offset(&self.b[self.i..]);
            match self.peek() {
                Some(b'"') => {
                    let s = &self.b[start..self.i];
                    self.i += 1;
                    return Ok((s, escaped));
                }
                Some(b'\\') => {
                    escaped = true;
                    self.escape()?;
                }
                Some(_) => return self.fail("control character in a string"),
                None => return self.fail("unterminated string"),
            }
        }
    }

    fn escape(&mut self) -> Result<()> {
        self.i += 1; // '\\'
        match self.peek() {
            Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => self.i += 1,
            Some(b'u') => {
                let unit = self.hex4(self.i + 1)?;
                self.i += 5;
                // As msgspec (and RFC 8259's UTF-16 rule): a high surrogate must be
                // followed by an escaped low one, and a low one never stands alone,
                // or a dropped value would let through what msgspec refuses.
                if (0xDC00..0xE000).contains(&unit) {
                    return self.fail("lone utf-16 surrogate");
                }
                if (0xD800..0xDC00).contains(&unit) {
                    if self.b.get(self.i..self.i + 2) != Some(b"\\u".as_slice()) {
                        return self.fail("lone utf-16 surrogate");
                    }
                    if !(0xDC00..0xE000).contains(&self.hex4(self.i + 2)?) {
                        return self.fail("lone utf-16 surrogate");
                    }
                    self.i += 6;
                }
            }
            _ => return self.fail("bad escape"),
        }
        Ok(())
    }

    /// The four hex digits at `at` as a UTF-16 code unit.
    fn hex4(&self, at: usize) -> Result<u32> {
        match self.b.get(at..at + 4) {
            Some(h) if h.iter().all(u8::is_ascii_hexdigit) => Ok(h
                .iter()
                .fold(0, |n, &c| n * 16 + (c as char).to_digit(16).unwrap_or(0))),
            _ => self.fail("bad \\u escape"),
        }
    }
}

const LOW: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// Where the first byte that ends a plain run of string content sits (a quote, a
/// backslash or a control character), or `s.len()`.
#[inline(always)]
fn special_offset(s: &[u8]) -> usize {
    let mut at = 0;
    #[cfg(target_arch = "x86_64")]
    {
        // SSE2 is part of x86-64 itself: sixteen bytes a step, no feature detection.
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8,
            _mm_or_si128, _mm_set1_epi8,
        };
        while let Some(chunk) = s.get(at..at + 16) {
            // SAFETY: `chunk` is 16 readable bytes; loadu has no alignment requirement.
            let mask = unsafe {
                let v = _mm_loadu_si128(chunk.as_ptr().cast::<__m128i>());
                let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
                let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
                // A byte below 0x20 is one whose unsigned max with 0x1f is 0x1f.
                let control =
                    _mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8(0x1f)), _mm_set1_epi8(0x1f));
                _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control))
            };
            if mask != 0 {
                return at + mask.trailing_zeros() as usize;
            }
            at += 16;
        }
    }
    while let Some(chunk) = s.get(at..at + 8) {
        let w = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        let quote = w ^ (LOW * u64::from(b'"'));
        let backslash = w ^ (LOW * u64::from(b'\\'));
        let hits = (quote.wrapping_sub(LOW) & !quote)
            | (backslash.wrapping_sub(LOW) & !backslash)
            | (w.wrapping_sub(LOW * 0x20) & !w);
        let hits = hits & HIGH;
        if hits != 0 {
            // Borrows only move upward, so the lowest flagged byte is a true one.
            return at + (hits.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    while let Some(&c) = s.get(at) {
        if c == b'"' || c == b'\\' || c < 0x20 {
            return at;
        }
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(doc: &str, keep: &[&str]) -> Result<String> {
        let keep: Vec<&[u8]> = keep.iter().map(|k| k.as_bytes()).collect();
        prune(doc.as_bytes(), b"jobs", &keep).map(|v| String::from_utf8(v).unwrap())
    }

    #[test]
    fn keeps_only_listed_keys_in_the_array_objects() {
        let doc = r#"{ "meta": {"a": [1, 2]}, "jobs": [ {"id": 1, "x": {"deep": [true, null]}, "name": "a\/b"}, {"x": 2}, 7 ] }"#;
        assert_eq!(
            run(doc, &["id", "name"]).unwrap(),
            r#"{"meta":{"a": [1, 2]},"jobs":[{"id":1,"name":"a\/b"},{},7]}"#
        );
    }

    #[test]
    fn surrogate_pairs_in_a_dropped_value_are_json() {
        let doc = r#"{"jobs": [{"id": 1, "x": "\ud83d\ude00 \uD800\uDC00 \u00e9"}]}"#;
        assert_eq!(run(doc, &["id"]).unwrap(), r#"{"jobs":[{"id":1}]}"#);
    }

    #[test]
    fn numbers_of_any_length_are_read_whole() {
        let doc =
            r#"{"jobs": [{"id": 12345678901234567890.5e+10, "x": 1796228976, "y": -0.25E-3}]}"#;
        assert_eq!(
            run(doc, &["id"]).unwrap(),
            r#"{"jobs":[{"id":12345678901234567890.5e+10}]}"#
        );
    }

    #[test]
    fn an_escaped_key_is_kept() {
        let doc = r#"{"jobs": [{"n\u0061me": "x", "other": 1}]}"#;
        assert_eq!(
            run(doc, &["name"]).unwrap(),
            r#"{"jobs":[{"n\u0061me":"x"}]}"#
        );
    }

    #[test]
    fn other_members_and_empty_containers_are_copied() {
        assert_eq!(run("{}", &[]).unwrap(), "{}");
        assert_eq!(run(r#"{"jobs": []}"#, &[]).unwrap(), r#"{"jobs":[]}"#);
        assert_eq!(
            run(r#"{"jobs": {"a": 1}}"#, &[]).unwrap(),
            r#"{"jobs":{"a": 1}}"#
        );
        assert_eq!(
            run(r#"{"jobs": [{}]}"#, &["a"]).unwrap(),
            r#"{"jobs":[{}]}"#
        );
    }

    #[test]
    fn refuses_what_is_not_json_even_in_a_dropped_value() {
        for bad in [
            r#"{"jobs": [{"x": tru}]}"#,
            r#"{"jobs": [{"x": 01}]}"#,
            r#"{"jobs": [{"x": 1.}]}"#,
            r#"{"jobs": [{"x": "a\q"}]}"#,
            r#"{"jobs": [{"x": "a"#,
            r#"{"jobs": [{"x": [1 2]}]}"#,
            r#"{"jobs": [{"x": 1}] } extra"#,
            "{\"jobs\": [{\"x\": \"a\tb\"}]}",
            r#"{"jobs": [{"x": "\u12g4"}]}"#,
            r#"{"jobs": [{"x": "\ud800"}]}"#,
            r#"{"jobs": [{"x": "\uDBFFa"}]}"#,
            r#"{"jobs": [{"x": "\ud800\n"}]}"#,
            r#"{"jobs": [{"x": "\ud800\u0041"}]}"#,
            r#"{"jobs": [{"x": "\ud800\ud800"}]}"#,
            r#"{"jobs": [{"x": "\udc00"}]}"#,
            r#"{"jobs": [{"x": ["\udfff"]}]}"#,
            r#"{"jobs": [{"x": 1234567:}]}"#,
            r#"{"jobs": [{"x": 12345678901234567a}]}"#,
            r#"[1]"#,
            "",
        ] {
            assert!(run(bad, &["id"]).is_err(), "{bad}");
        }
    }

    #[test]
    fn deep_nesting_is_refused_not_a_crash() {
        let doc = format!(
            r#"{{"jobs": [{{"x": {}{}}}]}}"#,
            "[".repeat(5000),
            "]".repeat(5000)
        );
        assert_eq!(run(&doc, &["id"]).unwrap_err().what, "nested too deeply");
    }
    #[test]
    fn any_split_guess_gives_what_one_thread_gives() {
        let docs = [
            r#"{"meta": {"a": [{"b": 1}, {"c": 2}]}, "jobs": [{"id": 1, "x": [{"y": 1}, {"z": "},{"}]}, {"id": 2, "s": "} , {"}, 3, {"id": 4}], "after": [{"id": 5}, {"id": 6}]}"#,
            r#"{"jobs": [{"id": 1}, {"id": 2, "x": {"deep": [{"a": 1}, {"b": 2}]}}, {"id": 3}]}"#,
            r#"{"jobs": [{"id": 1}, {"id": 2}, {"id": 3, "bad": tru}], "meta": 1}"#,
            r#"{"jobs": [{"id": 1}, {"id": 2}, {"id": 3}] "meta": 1}"#,
            r#"{"jobs": [{"id": 1}, {"id": 2}, {"id": 3}], "meta": 1} x"#,
            r#"{"jobs": [{"id": 1}, {"id": 2}], "jobs": [{"id": 3}, {"x": 4}]}"#,
        ];
        for doc in docs {
            let b = doc.as_bytes();
            let keep: [&[u8]; 1] = [b"id"];
            let alone = prune_split_at(b, b"jobs", &keep, None).map(|p| p.concat());
            for guess in 0..=b.len() {
                let split = prune_split_at(b, b"jobs", &keep, Some(guess)).map(|p| p.concat());
                match (&alone, &split) {
                    (Ok(x), Ok(y)) => assert_eq!(x, y, "{doc} split at {guess}"),
                    (Err(_), Err(_)) => {}
                    _ => panic!("{doc} split at {guess}: {alone:?} vs {split:?}"),
                }
            }
        }
    }

    #[test]
    fn a_large_document_splits_and_agrees() {
        let job = r#"{"id": 7, "name": "a\/b", "nested": [{"k": "},{"}, {"k": 2}], "n": -1.5e3}"#;
        let doc = format!(
            r#"{{"meta": {{"v": 1}}, "jobs": [{}], "errors": []}}"#,
            vec![job; 60_000].join(",\n  ")
        );
        assert!(doc.len() >= SPLIT_FROM);
        let b = doc.as_bytes();
        let keep: [&[u8]; 2] = [b"id", b"name"];
        let guess = element_guess(b).expect("a boundary");
        assert!(guess > b.len() / 2);
        let split = prune(b, b"jobs", &keep).unwrap();
        assert_eq!(
            prune_parts(b, b"jobs", &keep).unwrap().len(),
            2,
            "two threads"
        );
        assert_eq!(
            split,
            prune_split_at(b, b"jobs", &keep, None).unwrap().concat()
        );
        let broken = doc
            .replacen(r#""n": -1.5e3}"#, r#""n": -1.5e}"#, 59_000)
            .replacen(r#""n": -1.5e}"#, r#""n": -1.5e3}"#, 58_999);
        assert!(
            prune(broken.as_bytes(), b"jobs", &keep).is_err(),
            "an error in the second half is reported"
        );
    }
}
